//! The scheduler's per-request time stats: one line per finished request when SGLang logs
//! requests (`--log-requests`, and the `ReqTimeStats` debug print), the server's own account
//! of how long each request waited and ran.
//!
//! Forms (SGLang `observability/req_time_stats.py`, `SchedulerReqTimeStats.convert_to_duration`,
//! and the line's head printed beside it):
//! - unified: `ReqTimeStats(rid=…, input_len=472, cached_input_len=192, output_len=364,
//!   attempts=0, type=unified): queue_duration=1.64ms, forward_duration=2355.41ms,
//!   start_time=1787601371.304` (later builds add `initial_prefill_elapsed=…ms,
//!   post_prefill_elapsed=…ms` and print `entry_time=` for `start_time=`);
//! - PD prefill: `… type=prefill): bootstrap_queue_duration(12.00ms) = bootstrap(5.00ms) +
//!   alloc_wait(7.00ms); queue_duration=…ms, forward_duration=…ms, start=…,
//!   transfer_speed=1.23GB/s, transfer_total=10.00MB, #retries=0`;
//! - PD decode: `… type=decode): prealloc_queue_duration(…ms) = bootstrap(…ms) +
//!   alloc_wait(…ms); transfer_duration=…ms; queue_duration=…ms, forward_duration=…ms,
//!   start=…`;
//! - older builds: `Req Time Stats(rid=…, input len=…, output len=…, type=unified): …`.
//!
//! The head's fields and the durations are read by name, whatever their order, so a field a
//! later build adds is skipped, not an error. Durations are printed in milliseconds
//! (`format_duration`: `{ms:.2f}ms`) and returned in seconds.

use crate::grammar::PResult;
use crate::num::{parse_f64_bytes, parse_u64_bytes};
use nom::Parser;
use nom::branch::alt;
use nom::bytes::complete::{tag, take_till1, take_while1};
use nom::combinator::opt;
use nom::sequence::terminated;

/// Which server printed the stats: `type=` of the head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReqMode {
    /// A server without PD disaggregation (`type=unified`).
    Unified,
    /// A PD prefill server (`type=prefill`).
    Prefill,
    /// A PD decode server (`type=decode`).
    Decode,
    /// No `type=`, or one this crate does not know.
    Unknown,
}

/// One request's time stats, as the scheduler printed them (see the module doc). Durations
/// in seconds; `None` where the line does not print the field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReqTimes<'a> {
    /// The request id (`rid=`).
    pub rid: &'a str,
    /// Which server printed it.
    pub mode: ReqMode,
    /// Prompt tokens (`input_len`). Unit: tokens.
    pub input_len: Option<u64>,
    /// Prompt tokens served from the prefix cache (`cached_input_len`). Unit: tokens.
    pub cached_input_len: Option<u64>,
    /// Generated tokens (`output_len`). Unit: tokens.
    pub output_len: Option<u64>,
    /// Time in the scheduler's waiting queue, from entering it to its first forward pass
    /// (`queue_duration`). Unit: seconds.
    pub queue_s: Option<f64>,
    /// From its first forward pass to completion (`forward_duration`). Unit: seconds.
    pub forward_s: Option<f64>,
    /// PD prefill: from the bootstrap queue to the waiting queue
    /// (`bootstrap_queue_duration`). Unit: seconds.
    pub bootstrap_queue_s: Option<f64>,
    /// PD: the handshake part of the bootstrap or pre-allocation wait (`bootstrap(…)`).
    /// Unit: seconds.
    pub bootstrap_s: Option<f64>,
    /// PD: the wait for KV memory after the handshake (`alloc_wait(…)`). Unit: seconds.
    pub alloc_wait_s: Option<f64>,
    /// PD decode: from the pre-allocation queue to the transfer queue
    /// (`prealloc_queue_duration`). Unit: seconds.
    pub prealloc_queue_s: Option<f64>,
    /// PD decode: the KV transfer from the prefill server (`transfer_duration`). Unit: seconds.
    pub transfer_s: Option<f64>,
    /// PD prefill: the KV transfer's speed (`transfer_speed=…GB/s`). Unit: GB/s.
    pub transfer_gb_per_s: Option<f64>,
    /// When it entered the first queue (`start_time=`, `entry_time=`, `start=`). Unit: Unix
    /// seconds.
    pub start_unix_s: Option<f64>,
    /// PD prefill: the KV transfer's retries (`#retries=N`). Unit: retries.
    pub retries: Option<u64>,
}

/// `ReqTimeStats(` or the older `Req Time Stats(`.
fn head(i: &[u8]) -> PResult<'_, ()> {
    alt((tag(&b"ReqTimeStats("[..]), tag(&b"Req Time Stats("[..])))
        .map(|_| ())
        .parse(i)
}

/// One `name=value` or `name(value)` item; the name may hold spaces in the old head
/// (`input len`) and a `#` (`#retries`).
fn item(i: &[u8]) -> PResult<'_, (&[u8], &[u8])> {
    let name = take_while1(|c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b' ' | b'#'));
    let eq = (
        tag(&b"="[..]),
        take_till1(|c| matches!(c, b',' | b';' | b')' | b' ')),
    )
        .map(|(_, v)| v);
    let paren = (tag(&b"("[..]), take_till1(|c| c == b')'), tag(&b")"[..])).map(|(_, v, _)| v);
    (name, alt((eq, paren))).parse(i)
}

/// A duration as printed (`12.34ms`, or `1.5s`) in seconds.
fn seconds(v: &[u8]) -> Option<f64> {
    let (n, scale) = if let Some(n) = v.strip_suffix(b"ms") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix(b"s") {
        (n, 1.0)
    } else {
        return None;
    };
    parse_f64_bytes(n)
        .map(|x| x * scale)
        .filter(|x| x.is_finite() && *x >= 0.0)
}

/// Reads a `ReqTimeStats(…): …` message (see the module doc); `None` when it does not start
/// with the head or the head does not close.
pub fn parse_req_times(msg: &str) -> Option<ReqTimes<'_>> {
    let b = msg.as_bytes();
    let (i, ()) = head(b).ok()?;
    let close = memchr::memmem::find(i, b"):")?;
    let (args, tail) = (&i[..close], &i[close + 2..]);
    let mut out = ReqTimes {
        rid: "",
        mode: ReqMode::Unknown,
        input_len: None,
        cached_input_len: None,
        output_len: None,
        queue_s: None,
        forward_s: None,
        bootstrap_queue_s: None,
        bootstrap_s: None,
        alloc_wait_s: None,
        prealloc_queue_s: None,
        transfer_s: None,
        transfer_gb_per_s: None,
        start_unix_s: None,
        retries: None,
    };
    for part in args.split(|&c| c == b',') {
        let part = part.trim_ascii();
        let Some(eq) = part.iter().position(|&c| c == b'=') else {
            continue;
        };
        let (k, v) = (&part[..eq], &part[eq + 1..]);
        match k {
            b"rid" => out.rid = std::str::from_utf8(v).unwrap_or_default(),
            b"input_len" | b"input len" => out.input_len = parse_u64_bytes(v),
            b"cached_input_len" | b"cached input len" => out.cached_input_len = parse_u64_bytes(v),
            b"output_len" | b"output len" => out.output_len = parse_u64_bytes(v),
            b"type" => {
                out.mode = match v {
                    b"unified" => ReqMode::Unified,
                    b"prefill" => ReqMode::Prefill,
                    b"decode" => ReqMode::Decode,
                    _ => ReqMode::Unknown,
                }
            }
            _ => {}
        }
    }
    // the tail: items separated by `, `, `; `, ` = `, ` + `
    let mut rest = tail;
    while !rest.is_empty() {
        let skip = rest
            .iter()
            .take_while(|&&c| matches!(c, b' ' | b',' | b';' | b'=' | b'+'))
            .count();
        rest = &rest[skip..];
        if rest.is_empty() {
            break;
        }
        match terminated(item, opt(tag(&b")"[..]))).parse(rest) {
            Ok((r, (k, v))) => {
                match k {
                    b"queue_duration" => out.queue_s = seconds(v),
                    b"forward_duration" => out.forward_s = seconds(v),
                    b"bootstrap_queue_duration" => out.bootstrap_queue_s = seconds(v),
                    b"bootstrap" => out.bootstrap_s = seconds(v),
                    b"alloc_wait" => out.alloc_wait_s = seconds(v),
                    b"prealloc_queue_duration" => out.prealloc_queue_s = seconds(v),
                    b"transfer_duration" => out.transfer_s = seconds(v),
                    b"transfer_speed" => {
                        out.transfer_gb_per_s = v
                            .strip_suffix(b"GB/s")
                            .and_then(parse_f64_bytes)
                            .filter(|x| x.is_finite() && *x >= 0.0)
                    }
                    b"#retries" => out.retries = parse_u64_bytes(v),
                    b"start_time" | b"entry_time" | b"start" => {
                        out.start_unix_s = parse_f64_bytes(v).filter(|x| x.is_finite() && *x > 0.0)
                    }
                    _ => {}
                }
                rest = r;
            }
            // not an item: skip to the next separator
            Err(_) => {
                let n = rest
                    .iter()
                    .position(|&c| matches!(c, b',' | b';'))
                    .map_or(rest.len(), |p| p + 1);
                rest = &rest[n..];
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// real-4/118 (v0.5.18.dev): the unified form with the prefill split and `entry_time`.
    #[test]
    fn the_unified_form_of_a_recent_build() {
        let r = parse_req_times("ReqTimeStats(rid=f33959f243264372b850e67387406e7b, input_len=300447, cached_input_len=300032, output_len=640, attempts=0, type=unified): queue_duration=31.04ms, initial_prefill_elapsed=331.65ms, post_prefill_elapsed=4340.25ms, forward_duration=4671.90ms, entry_time=1787601379.725").unwrap();
        assert_eq!(r.rid, "f33959f243264372b850e67387406e7b");
        assert_eq!(r.mode, ReqMode::Unified);
        assert_eq!(
            (r.input_len, r.cached_input_len, r.output_len),
            (Some(300447), Some(300032), Some(640))
        );
        assert!((r.queue_s.unwrap() - 0.03104).abs() < 1e-9);
        assert!((r.forward_s.unwrap() - 4.6719).abs() < 1e-9);
        assert_eq!(r.start_unix_s, Some(1787601379.725));
        assert_eq!(r.transfer_s, None);
    }

    /// The PD forms as `convert_to_duration` writes them, and the older head with spaces.
    #[test]
    fn the_pd_forms_and_the_old_head() {
        let p = parse_req_times("ReqTimeStats(rid=a1, input_len=1024, output_len=1, type=prefill): bootstrap_queue_duration(12.00ms) = bootstrap(5.00ms) + alloc_wait(7.00ms); queue_duration=3.50ms, forward_duration=80.25ms, start=1700000000.125, transfer_speed=1.23GB/s, transfer_total=10.00MB, #retries=0").unwrap();
        assert_eq!(p.mode, ReqMode::Prefill);
        assert!((p.bootstrap_queue_s.unwrap() - 0.012).abs() < 1e-12);
        assert!((p.bootstrap_s.unwrap() - 0.005).abs() < 1e-12);
        assert!((p.alloc_wait_s.unwrap() - 0.007).abs() < 1e-12);
        assert!((p.queue_s.unwrap() - 0.0035).abs() < 1e-12);
        assert_eq!(p.transfer_gb_per_s, Some(1.23));
        assert_eq!(p.retries, Some(0));
        assert_eq!(p.start_unix_s, Some(1700000000.125));
        let d = parse_req_times("ReqTimeStats(rid=b2, input_len=1024, output_len=300, type=decode): prealloc_queue_duration(250.00ms) = bootstrap(10.00ms) + alloc_wait(240.00ms); transfer_duration=40.00ms; queue_duration=1.00ms, forward_duration=9000.00ms, start=1700000001.000").unwrap();
        assert_eq!(d.mode, ReqMode::Decode);
        assert!((d.prealloc_queue_s.unwrap() - 0.25).abs() < 1e-12);
        assert!((d.alloc_wait_s.unwrap() - 0.24).abs() < 1e-12);
        assert!((d.transfer_s.unwrap() - 0.04).abs() < 1e-12);
        assert!((d.forward_s.unwrap() - 9.0).abs() < 1e-12);
        let old = parse_req_times("Req Time Stats(rid=c3, input len=7, output len=9, type=unified): queue_duration=0.50ms, forward_duration=120.00ms, start_time=1700000002.500").unwrap();
        assert_eq!((old.input_len, old.output_len), (Some(7), Some(9)));
        assert!((old.queue_s.unwrap() - 0.0005).abs() < 1e-12);
        // a head that never closes, another line, a negative or unitless duration
        assert_eq!(parse_req_times("ReqTimeStats(rid=x, input_len=3"), None);
        assert_eq!(parse_req_times("Decode batch. #running-req: 1"), None);
        let bad = parse_req_times(
            "ReqTimeStats(rid=d, type=unified): queue_duration=-1.00ms, forward_duration=12",
        )
        .unwrap();
        assert_eq!((bad.queue_s, bad.forward_s), (None, None));
    }
}
