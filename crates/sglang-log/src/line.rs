//! Line-level parsing: wrapper stripping, the envelope (timestamp + rank tags), and dispatch on
//! the message head.

use crate::batch;
use crate::events::{self, ServerArgs};
use crate::ranks::RankTags;
use crate::timestamp::{Timestamp, parse_timestamp, starts_with_iso_t};
use crate::{Event, Record};
use memchr::memmem;
use std::sync::LazyLock;

static BATCH: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"batch"));

/// Where a batch marker (`Decode batch`, `Prefill batch`, `Prefil batch`, `new fill batch`)
/// starts in `b`, if anywhere. Case-sensitive, like SGLang's output.
pub fn find_batch_marker(b: &[u8]) -> Option<usize> {
    for i in BATCH.find_iter(b) {
        let before = &b[..i];
        for head in [&b"Decode "[..], b"Prefill ", b"Prefil ", b"new fill "] {
            if before.ends_with(head) {
                return Some(i - head.len());
            }
        }
    }
    None
}

/// Parses one log line (without its line terminator; trailing `\r`/`\n` are tolerated) into
/// exactly one [`Record`]. Never panics and never allocates.
///
/// Lines with invalid UTF-8 become [`Event::Malformed`] when they carry a batch marker, else
/// [`Event::Other`]. A line holding `\r` (tqdm progress output) is reduced to the `\r`-separated
/// segment that carries a batch marker, else to its last non-empty segment.
pub fn parse_line(line: &[u8], line_no: u64) -> Record<'_> {
    let mut rec = Record {
        line_no,
        timestamp: None,
        ranks: RankTags::default(),
        message: "",
        event: Event::Other,
    };
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    let mut bytes = &line[..end];
    if memchr::memchr(b'\r', bytes).is_some() {
        bytes = pick_cr_segment(bytes);
    }
    let s = match std::str::from_utf8(bytes) {
        Ok(s) if s.len() <= u32::MAX as usize => s,
        Ok(_) => {
            if find_batch_marker(bytes).is_some() {
                rec.event = Event::Malformed {
                    reason: "batch line longer than 4 GiB",
                };
            }
            return rec;
        }
        Err(_) => {
            if find_batch_marker(bytes).is_some() {
                rec.event = Event::Malformed {
                    reason: "invalid UTF-8 in a batch line",
                };
            }
            return rec;
        }
    };
    parse_str(s, &mut rec);
    rec
}

/// [`parse_line`] for a line already known to be valid UTF-8 without `\r` or `\n` (the reader
/// checks whole blocks of lines at once).
pub(crate) fn parse_clean_line(s: &str, line_no: u64) -> Record<'_> {
    let mut rec = Record {
        line_no,
        timestamp: None,
        ranks: RankTags::default(),
        message: "",
        event: Event::Other,
    };
    if s.len() > u32::MAX as usize {
        if find_batch_marker(s.as_bytes()).is_some() {
            rec.event = Event::Malformed {
                reason: "batch line longer than 4 GiB",
            };
        }
        return rec;
    }
    parse_str(s, &mut rec);
    rec
}

fn pick_cr_segment(b: &[u8]) -> &[u8] {
    let mut last_nonempty: &[u8] = &[];
    for seg in b.split(|&c| c == b'\r') {
        if find_batch_marker(seg).is_some() {
            return seg;
        }
        if seg.iter().any(|c| !c.is_ascii_whitespace()) {
            last_nonempty = seg;
        }
    }
    last_nonempty
}

fn parse_str<'a>(line: &'a str, rec: &mut Record<'a>) {
    let (s, outer_ts) = strip_wrappers(line);
    let (ts, ranks, mut msg, enveloped) = match envelope(s) {
        Some((ts, ranks, msg)) => (ts, ranks, msg, true),
        None => match outer_ts {
            // `2025-10-20T03:02:22Z INFO 31223 [DP3 TP3 file.py:222] msg` style
            Some(_) => {
                let (ranks, msg) = after_timestamp(s).unwrap_or((RankTags::default(), s));
                (None, ranks, msg, !ranks.is_empty())
            }
            None => (None, RankTags::default(), s, false),
        },
    };
    rec.timestamp = ts.or(outer_ts);
    rec.ranks = ranks;
    msg = skip_level(skip_ansi(msg));
    if msg.starts_with("[gpu")
        && let Some((r, rest)) = bracket_ranks(msg)
    {
        rec.ranks.fill_from(&r);
        msg = rest;
    }
    msg = trim_trailing_ansi(msg);
    rec.message = msg;
    dispatch(msg, &mut rec.event);
    if matches!(rec.event, Event::Other) && (enveloped || rec.timestamp.is_some()) {
        rec.event = fallback_scan(msg);
    }
    if !matches!(rec.event, Event::Batch(_) | Event::Malformed { .. })
        && let Some((s, p)) = find_batch_marker(s.as_bytes())
            .map(|p| (s, p))
            // a marker inside a stripped wrapper (`(Name pid=…Decode batch…)`) still counts
            .or_else(|| find_batch_marker(line.as_bytes()).map(|p| (line, p)))
    {
        // Robust path: the batch marker is somewhere in the line (unknown envelope, a lost `[`,
        // a wrapper we do not know). Parse from the marker; recover stamp and ranks from the
        // text before it.
        let sub = trim_trailing_ansi(&s[p..]);
        if sub.starts_with('n') {
            batch::parse_legacy_fill_into(sub, &mut rec.event);
        } else {
            batch::parse_standard_into(sub, &mut rec.event);
        }
        rec.message = sub;
        lenient_prefix(&s[..p], rec);
    }
}

/// Sets `out` (which is `Event::Other` on entry) from the message head.
fn dispatch<'a>(msg: &'a str, out: &mut Event<'a>) {
    let Some(&first) = msg.as_bytes().first() else {
        return;
    };
    let starts = |p: &str| msg.starts_with(p);
    let retraction = || events::parse_retraction(msg).map_or(Event::Other, Event::Retraction);
    *out = match first {
        b'D' if starts("Decode batch") => return batch::parse_standard_into(msg, out),
        b'D' if starts("Decode out of memory happened") => retraction(),
        b'P' if starts("Prefill batch") || starts("Prefil batch") => {
            return batch::parse_standard_into(msg, out);
        }
        b'n' if starts("new fill batch") => return batch::parse_legacy_fill_into(msg, out),
        b'#' if starts("#running-req:") => {
            batch::parse_legacy_stats(msg).map_or(Event::Other, Event::Batch)
        }
        b'd' if starts("decode out of memory happened") => retraction(),
        b'K' if starts("KV cache pool is full") => retraction(),
        b'K' if starts("KV Cache is allocated.") => {
            let body = &msg["KV Cache is allocated.".len()..];
            Event::KvCacheAllocated(events::parse_kv_allocated(body))
        }
        b'K' if starts("KV transfer failed") || starts("KVTransferError") => {
            Event::KvTransferFailed(msg)
        }
        b'T' if starts("The server is fired up and ready to roll") => Event::ServerReady,
        b'T' if starts("Testing retraction.") => retraction(),
        b'T' if starts("Transfer failed") => Event::KvTransferFailed(msg),
        b'L' if starts("Load weight end") => Event::LoadWeightEnd(events::parse_memory(msg)),
        b'M' if starts("Memory pool end") => Event::MemoryPoolEnd(events::parse_memory(msg)),
        b'C' if starts("Capture ") && memmem::find(msg.as_bytes(), b"graph end").is_some() => {
            Event::CudaGraphEnd(events::parse_memory(msg))
        }
        b'm' if starts("max_total_num_tokens=") => Event::Capacity(events::parse_capacity(msg)),
        b's' if starts("server_args=") => {
            let rest = &msg["server_args=".len()..];
            let inner = rest.strip_prefix("ServerArgs(").unwrap_or(rest).trim_end();
            let inner = inner.strip_suffix(')').unwrap_or(inner);
            Event::ServerArgs(ServerArgs::new(inner))
        }
        b'A' => match events::parse_hicache(msg) {
            Some((host_gb, host_tokens)) => Event::HiCacheAllocated {
                host_gb,
                host_tokens,
            },
            None => Event::Other,
        },
        b'W' if starts("Watchdog timeout") => Event::WatchdogTimeout(msg),
        _ => return,
    };
}

static WATCHDOG: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"atchdog timeout"));
static TRANSFER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"ransfer failed"));

/// Messages of SGLang-logged lines (with an envelope) whose keyword is not at the start, e.g.
/// `Scheduler watchdog timeout (…)` or `Decode transfer failed for request rank=…`.
fn fallback_scan(msg: &str) -> Event<'_> {
    let b = msg.as_bytes();
    if WATCHDOG.find(b).is_some() {
        return Event::WatchdogTimeout(msg);
    }
    if TRANSFER.find(b).is_some() || memmem::find(b, b"KVTransferError").is_some() {
        return Event::KvTransferFailed(msg);
    }
    Event::Other
}

/// Skips ANSI escape sequences (`ESC [ … final`) and spaces at the start.
fn skip_ansi(mut s: &str) -> &str {
    loop {
        let b = s.as_bytes();
        match b.first() {
            Some(b' ' | b'\t') => s = &s[1..],
            Some(0x1b) => {
                if b.get(1) == Some(&b'[') {
                    let end = b[2..]
                        .iter()
                        .position(|c| (0x40..=0x7e).contains(c))
                        .map(|p| p + 3)
                        .unwrap_or(b.len());
                    s = &s[end..];
                } else {
                    s = &s[1..];
                }
            }
            _ => return s,
        }
    }
}

/// Removes ANSI escape sequences at the end of the line (e.g. a colour reset `ESC[0m`).
fn trim_trailing_ansi(s: &str) -> &str {
    let mut s = s;
    loop {
        let b = s.as_bytes();
        let tail_start = b.len().saturating_sub(16);
        match memchr::memrchr(0x1b, &b[tail_start..]) {
            Some(p) => {
                let at = tail_start + p;
                let tail = &b[at..];
                let is_seq = tail.len() >= 3
                    && tail[1] == b'['
                    && tail[2..tail.len() - 1]
                        .iter()
                        .all(|c| (0x20..=0x3f).contains(c))
                    && (0x40..=0x7e).contains(&tail[tail.len() - 1]);
                if is_seq {
                    s = &s[..at];
                } else {
                    return s;
                }
            }
            None => return s,
        }
    }
}

/// Strips wrappers that other tools put in front of a log line: ANSI colours, markdown quotes
/// `> `, Ray actor tags `(Name pid=N[, ip=…]) `, docker-compose `service-1  | `, and a
/// container runtime's ISO stamp `2025-…T…Z ` (returned as the outer timestamp).
fn strip_wrappers(mut s: &str) -> (&str, Option<Timestamp>) {
    let mut outer = None;
    for _ in 0..8 {
        s = skip_ansi(s);
        let b = s.as_bytes();
        match b.first() {
            Some(b'>') => {
                s = &s[1..];
                continue;
            }
            Some(b'(') => {
                if let Some(r) = ray_tag(s) {
                    s = r;
                    continue;
                }
            }
            Some(c) if c.is_ascii_digit() && starts_with_iso_t(s) => {
                if let Some((t, rest)) = parse_timestamp(s)
                    && rest.starts_with([' ', '\t'])
                {
                    outer = Some(t);
                    s = rest;
                    continue;
                }
            }
            Some(c) if c.is_ascii_alphanumeric() => {
                if let Some(r) = compose_prefix(s) {
                    s = r;
                    continue;
                }
            }
            _ => {}
        }
        break;
    }
    (s, outer)
}

/// `(SchedulerActor pid=1234, ip=10.0.0.5) ` → the rest.
fn ray_tag(s: &str) -> Option<&str> {
    let head = &s.as_bytes()[..s.len().min(160)];
    let close = memchr::memchr(b')', head)?;
    let inner = &s[1..close];
    let (name, tail) = inner.split_once(' ')?;
    if name.is_empty()
        || !name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':')
    {
        return None;
    }
    if !tail.starts_with("pid=") {
        return None;
    }
    Some(&s[close + 1..])
}

/// docker-compose `sglang-1  | ` / `sglang  | ` → the rest.
fn compose_prefix(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let name_len = b
        .iter()
        .take(65)
        .position(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')))?;
    if name_len == 0 || name_len > 64 || b[name_len] != b' ' {
        return None;
    }
    let mut i = name_len;
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    if b.get(i) != Some(&b'|') {
        return None;
    }
    i += 1;
    if b.get(i) == Some(&b' ') {
        i += 1;
    }
    Some(&s[i..])
}

/// The SGLang envelope at the start of `s`:
/// - `[TS( TAG)*] msg` (also `[ DP15 TP15] msg`, `[TS]`, ms stamps, `[TS][file.py:N][INFO]: msg`),
/// - `TS( TAG)*] msg` (a paste that lost the `[`),
/// - `TS LEVEL PID [TAG… file.py:N] msg` (custom logging formats),
/// - `TS msg`.
///
/// Returns `(timestamp, ranks, message)`; `None` when `s` has no recognisable envelope.
fn envelope(s: &str) -> Option<(Option<Timestamp>, RankTags, &str)> {
    match s.as_bytes().first()? {
        b'[' => {
            let (ts, ranks, rest) = bracket_envelope(s)?;
            Some((ts, ranks, rest))
        }
        c if c.is_ascii_digit() => {
            let (ts, rest) = parse_timestamp(s)?;
            let (ranks, msg) = after_timestamp(rest)?;
            Some((Some(ts), ranks, msg))
        }
        _ => None,
    }
}

/// What follows a bare timestamp: `( TAG)*] msg`, `LEVEL [PID] [TAG… file:N] msg`, or ` msg`.
fn after_timestamp(rest: &str) -> Option<(RankTags, &str)> {
    let mut ranks = RankTags::default();
    let b = rest.as_bytes();
    // `( TAG)*] msg`: the bracket lost its opening `[`
    if let Some(close) = memchr::memchr(b']', &b[..b.len().min(80)]) {
        let inner = &rest[..close];
        let mut all = true;
        for tok in inner.split(' ').filter(|t| !t.is_empty()) {
            all &= ranks.apply_token(tok);
        }
        if all && !inner.contains('[') {
            return Some((ranks, skip_ansi(&rest[close + 1..])));
        }
        ranks = RankTags::default();
    }
    match b.first() {
        Some(b' ' | b'\t') => {}
        None => return Some((ranks, rest)),
        _ => return None,
    }
    let mut w = rest.trim_start();
    // LEVEL word, optional PID, optional `[tags file:N]`
    for level in ["INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL", "WARN"] {
        if let Some(r) = w.strip_prefix(level)
            && r.starts_with([' ', ':'])
        {
            w = r.trim_start_matches(':').trim_start();
            let digits = w.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && w[digits..].starts_with(' ') {
                w = w[digits..].trim_start();
            }
            if w.starts_with('[')
                && let Some(close) = memchr::memchr(b']', &w.as_bytes()[..w.len().min(160)])
            {
                for tok in w[1..close].split(' ').filter(|t| !t.is_empty()) {
                    ranks.apply_token(tok);
                }
                w = w[close + 1..].trim_start_matches(':').trim_start();
            }
            break;
        }
    }
    Some((ranks, w))
}

/// `[TS( TAG)*]` with optional attached `[…]` groups (`[file.py:424][INFO]:`).
fn bracket_envelope(s: &str) -> Option<(Option<Timestamp>, RankTags, &str)> {
    let b = s.as_bytes();
    let close = memchr::memchr(b']', &b[..b.len().min(96)])?;
    let inner = s[1..close].trim_start();
    let (ts, tokens) = match parse_timestamp(inner) {
        Some((t, rest)) => (Some(t), rest),
        None => (None, inner),
    };
    let mut ranks = RankTags::default();
    for tok in tokens.split(' ').filter(|t| !t.is_empty()) {
        if !ranks.apply_token(tok) && ts.is_none() {
            return None;
        }
    }
    if ts.is_none() && ranks.is_empty() {
        return None;
    }
    let mut rest = &s[close + 1..];
    // attached groups such as `[scheduler_metrics_mixin.py:424][INFO]`
    for _ in 0..4 {
        let rb = rest.as_bytes();
        if rb.first() != Some(&b'[') {
            break;
        }
        let Some(c) = memchr::memchr(b']', &rb[..rb.len().min(128)]) else {
            break;
        };
        for tok in rest[1..c].split(' ').filter(|t| !t.is_empty()) {
            ranks.apply_token(tok);
        }
        rest = &rest[c + 1..];
    }
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    Some((ts, ranks, skip_ansi(rest)))
}

/// `[gpu=N] msg` / `[gpu_id=N] msg` → the rank and the rest.
fn bracket_ranks(s: &str) -> Option<(RankTags, &str)> {
    let close = memchr::memchr(b']', &s.as_bytes()[..s.len().min(32)])?;
    let mut r = RankTags::default();
    for tok in s[1..close].split(' ').filter(|t| !t.is_empty()) {
        if !r.apply_token(tok) {
            return None;
        }
    }
    Some((r, s[close + 1..].trim_start()))
}

/// Uvicorn's / Python's level prefix (`INFO:     `, `WARNING:  `) in front of a message.
fn skip_level(msg: &str) -> &str {
    for level in ["INFO:", "WARNING:", "ERROR:", "DEBUG:", "CRITICAL:"] {
        if let Some(r) = msg.strip_prefix(level) {
            return r.trim_start();
        }
    }
    msg
}

/// Recovers a timestamp and rank tags from free text before a batch marker, filling only
/// what the envelope did not provide.
fn lenient_prefix(prefix: &str, rec: &mut Record<'_>) {
    let b = prefix.as_bytes();
    if rec.timestamp.is_none() {
        for i in 0..b.len() {
            if !b[i].is_ascii_digit() {
                continue;
            }
            let prev = if i == 0 { None } else { Some(b[i - 1]) };
            if prev.is_some_and(|p| p.is_ascii_digit() || matches!(p, b'-' | b':' | b'.' | b',')) {
                continue;
            }
            if let Some((t, _)) = parse_timestamp(&prefix[i..]) {
                // a date-less time is only trusted at the start of a bracket or line
                if t.has_date() || matches!(prev, None | Some(b'[')) {
                    rec.timestamp = Some(t);
                    break;
                }
            }
        }
    }
    if rec.ranks.is_empty() {
        for tok in prefix.split([' ', '[', ']', '(', ')', '|', ',']) {
            rec.ranks.apply_token(tok);
        }
    }
}
