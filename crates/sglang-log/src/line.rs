//! Line-level parsing: wrapper stripping, the envelope (timestamp + rank tags), and dispatch on
//! the message head.

use crate::batch;
use crate::events::{self, ServerArgs};
use crate::grammar::{
    PResult, all_tokens, byte, byte_if, fail, offset_of, skip_colons, skip_ws, spaces, str_tail, ws,
};
use crate::ranks::RankTags;
use crate::timestamp::{
    Timestamp, iso_t_timestamp, parse_stamp19, parse_stamp19_after, parse_timestamp, timestamp,
};
use crate::{Event, Record};
use memchr::memmem;
use nom::Parser;
use nom::branch::alt;
use nom::bytes::complete::{tag, take_till, take_till1, take_until, take_while1};
use nom::character::complete::digit1;
use nom::combinator::{opt, peek, value, verify};
use nom::multi::many0_count;
use nom::sequence::{delimited, preceded, terminated};
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
    parse_line_cached(line, line_no, &mut LineCache::new(true))
}

/// [`parse_line`] for a caller that parses many lines one at a time (lines kept aside and
/// read later, a chunk's rare lines): the caches a reader keeps from line to line (the last
/// stamp, rank tags and batch key order) are built once, not per call, which makes each line
/// several hundred instructions cheaper. Every call returns exactly [`parse_line`]'s record.
#[derive(Clone, Debug)]
pub struct LineParser {
    cache: LineCache,
}

impl Default for LineParser {
    fn default() -> Self {
        Self::new()
    }
}

impl LineParser {
    /// A parser with empty caches.
    pub fn new() -> Self {
        LineParser {
            cache: LineCache::new(true),
        }
    }

    /// [`parse_line`] of `line` (1-based `line_no`), with this parser's caches.
    pub fn parse<'a>(&mut self, line: &'a [u8], line_no: u64) -> Record<'a> {
        parse_line_cached(line, line_no, &mut self.cache)
    }
}

/// [`parse_line`] with the caches of a reader (see [`LineCache`]).
pub(crate) fn parse_line_cached<'a>(
    line: &'a [u8],
    line_no: u64,
    cache: &mut LineCache,
) -> Record<'a> {
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
    // a line without an ESC byte has no ANSI sequence to trim (and may take a line layout)
    let line_no_esc = memchr::memchr(0x1b, s.as_bytes()).is_none();
    let no_esc = std::mem::replace(&mut cache.no_esc, line_no_esc);
    parse_str(s, &mut rec, cache);
    cache.no_esc = no_esc;
    rec
}

/// [`parse_line`] for a line already known to be valid UTF-8 without `\r` or `\n` (the reader
/// checks whole blocks of lines at once).
#[cfg(test)]
pub(crate) fn parse_clean_line<'a>(s: &'a str, line_no: u64, cache: &mut LineCache) -> Record<'a> {
    let mut rec = Record {
        line_no,
        timestamp: None,
        ranks: RankTags::default(),
        message: "",
        event: Event::Other,
    };
    parse_clean_line_into(s, line_no, cache, &mut rec);
    rec
}

/// [`parse_clean_line`] into a record the caller owns (every field is overwritten), so that
/// the (large) record is built where the callback reads it instead of being moved there.
/// The fields are written once each, by [`parse_str`]: set to their defaults here first, the
/// 56-byte rank tags among them, they cost ~12 instructions a line.
#[inline]
pub(crate) fn parse_clean_line_into<'a>(
    s: &'a str,
    line_no: u64,
    cache: &mut LineCache,
    rec: &mut Record<'a>,
) {
    rec.line_no = line_no;
    if s.len() > u32::MAX as usize {
        rec.timestamp = None;
        rec.ranks = RankTags::default();
        rec.message = "";
        rec.event = Event::Other;
        if find_batch_marker(s.as_bytes()).is_some() {
            rec.event = Event::Malformed {
                reason: "batch line longer than 4 GiB",
            };
        }
        return;
    }
    parse_str(s, rec, cache);
}

/// What one reader remembers from line to line to make the next line cheap. Every cache here
/// only short-cuts work whose result is known to be the same; a line that does not fit takes
/// the general path.
#[derive(Clone, Debug)]
pub(crate) struct LineCache {
    /// Key order of the previous batch lines (for the fast field splitter).
    pub(crate) keys: batch::KeyOrder,
    /// The layouts of the previous batch and access lines (a line of a known layout skips the
    /// envelope, the dispatch and the splitter or access scan: `batch/layout.rs`).
    layouts: batch::Layouts,
    /// The 19 bytes `YYYY-MM-DD HH:MM:SS` of the last `[`-stamp parsed, and its value.
    stamp: [u8; 19],
    stamp_ts: Option<Timestamp>,
    /// The bytes after the stamp up to and including `]` (e.g. ` DP1 TP4]`, at most 16) of
    /// the last envelopes whose tags were parsed, as little-endian words, the masks of their
    /// lengths (0: empty entry), their lengths and the tags; the next entry to replace; the
    /// entry the last line matched (tried first: a log's lines come in runs of one rank).
    tags: [(u128, u128, usize, RankTags); TAG_ENTRIES],
    tags_next: usize,
    tags_last: usize,
    /// The current line holds no ESC byte (the reader checked its block), so there are no ANSI
    /// sequences to trim at the end.
    pub(crate) no_esc: bool,
    /// Whether the envelope fast path runs (off: the general path only, for tests).
    fast: bool,
}

/// Distinct rank-tag groups remembered (a DP/TP log interleaves a few).
const TAG_ENTRIES: usize = 8;

impl LineCache {
    /// Empty caches; `fast: false` turns every fast path off (for equivalence tests).
    pub(crate) fn new(fast: bool) -> Self {
        LineCache {
            keys: batch::KeyOrder::new(fast),
            layouts: batch::Layouts::new(fast),
            stamp: [0; 19],
            stamp_ts: None,
            tags: [(0, 0, 0, RankTags::default()); TAG_ENTRIES],
            tags_next: 0,
            tags_last: 0,
            no_esc: false,
            fast,
        }
    }

    /// [`LineCache::new`] with every fast path but the line layouts (to compare the records
    /// the layouts give with the splitter's and the access scan's, bit for bit).
    #[cfg(any(test, feature = "grammar-check"))]
    pub(crate) fn without_layouts() -> Self {
        LineCache {
            layouts: batch::Layouts::new(false),
            ..LineCache::new(true)
        }
    }

    /// Lines the layouts read so far (for the tests that must see them used).
    #[cfg(test)]
    pub(crate) fn layout_hits(&self) -> u64 {
        self.layouts.hits
    }

    /// Whether the layouts are in use (for the tests).
    #[cfg(test)]
    pub(crate) fn layouts_enabled(&self) -> bool {
        self.layouts.enabled()
    }
}

/// The stamp `line[1..20]` (`YYYY-MM-DD HH:MM:SS`), reused from the previous line when its
/// bytes are the same, else read after it ([`parse_stamp19_after`]); `None` when it is no
/// stamp.
#[inline(always)]
fn stamp_of(b: &[u8], c: &mut LineCache) -> Option<Timestamp> {
    let stamp: &[u8; 19] = b.get(1..20)?.try_into().ok()?;
    Some(match c.stamp_ts {
        Some(t) if *stamp == c.stamp => t,
        prev => {
            let t = match prev {
                Some(p) => parse_stamp19_after(&c.stamp, p, stamp)?,
                None => parse_stamp19(stamp)?,
            };
            c.stamp = *stamp;
            c.stamp_ts = Some(t);
            t
        }
    })
}

/// The dominant SGLang envelope `[YYYY-MM-DD HH:MM:SS( TAG)*] msg` read at fixed offsets, with
/// the stamp and the tags reused from the previous line when their bytes are the same.
/// Returns `(timestamp, ranks, message)` exactly as [`strip_wrappers`] + [`envelope`] would
/// for such a line, or `None` to send the line down the general path (attached `[…]` groups,
/// a `:` after the bracket, other stamp forms, no `]` within 96 bytes).
#[inline]
fn fast_envelope<'a>(line: &'a str, c: &mut LineCache) -> Option<(Timestamp, RankTags, &'a str)> {
    let b = line.as_bytes();
    if !c.fast || b.len() < 22 || b[0] != b'[' || !matches!(b[20], b' ' | b']') {
        return None;
    }
    let ts = stamp_of(b, c)?;
    let (ranks, close) = if b[20] == b']' {
        (RankTags::default(), 20)
    } else {
        // ` TAGS]` as one word (zero-padded); an entry matches when its bytes are the same
        let w = match b.get(20..36).and_then(|c| <[u8; 16]>::try_from(c).ok()) {
            // the usual case: 16 bytes follow, one load (no copy call)
            Some(c) => u128::from_le_bytes(c),
            None => {
                let mut w = [0u8; 16];
                let avail = (b.len() - 20).min(16);
                w[..avail].copy_from_slice(&b[20..20 + avail]);
                u128::from_le_bytes(w)
            }
        };
        // an empty entry has an empty mask and 0 bytes: it never matches
        let fits =
            |&(tw, mask, len, _): &(u128, u128, usize, RankTags)| len > 0 && (w ^ tw) & mask == 0;
        let last = c.tags_last % TAG_ENTRIES;
        let hit = if fits(&c.tags[last]) {
            Some(last)
        } else {
            c.tags.iter().position(fits)
        };
        match hit {
            // the cached bytes end in the first `]` of their line and hold no other
            Some(at) => {
                c.tags_last = at;
                let (_, _, len, ranks) = c.tags[at % TAG_ENTRIES];
                (ranks, 20 + len - 1)
            }
            None => {
                // the stamp holds no `]`: this is the first `]` of the line, as the general
                // path finds it
                let close = memchr::memchr(b']', &b[..b.len().min(96)])?;
                let mut ranks = RankTags::default();
                for tok in line.get(20..close)?.split(' ').filter(|t| !t.is_empty()) {
                    // with a timestamp, tokens that are not rank tags are skipped (as the
                    // general path does)
                    ranks.apply_token(tok);
                }
                let n = close + 1 - 20;
                if n <= 16 {
                    let keep = u128::MAX >> (8 * (16 - n));
                    c.tags[c.tags_next] = (w & keep, keep, n, ranks);
                    c.tags_next = (c.tags_next + 1) % TAG_ENTRIES;
                }
                (ranks, close)
            }
        }
    };
    let rest = &line[close + 1..];
    if matches!(rest.as_bytes().first(), Some(b'[' | b':')) {
        return None;
    }
    Some((ts, ranks, skip_ansi(rest)))
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

/// Reads `line` into `rec`: its stamp, rank tags, message and event, each written whatever
/// `rec` held (the line number is the caller's).
#[inline]
fn parse_str<'a>(line: &'a str, rec: &mut Record<'a>, cache: &mut LineCache) {
    // a batch or access line of a layout seen before: the record without the envelope,
    // dispatch and splitter or access scan (the layouts are learnt below, from lines without
    // an ANSI escape)
    if cache.no_esc
        && let Some((m, ranks)) = cache.layouts.read(line, &mut rec.event)
        && let Some(ts) = stamp_of(line.as_bytes(), cache)
    {
        rec.timestamp = Some(ts);
        rec.ranks = ranks;
        rec.message = line.get(m..).unwrap_or("");
        return;
    }
    // (a layout's miss leaves the event as it was, a hit without a stamp the layout's, and
    // `dispatch` leaves an empty message's)
    rec.event = Event::Other;
    let mut fast_env = false;
    let (s, outer_ts, ts, ranks, mut msg, enveloped) = match fast_envelope(line, cache) {
        Some((ts, ranks, msg)) => {
            fast_env = true;
            (line, None, Some(ts), ranks, msg, true)
        }
        None => {
            // `…100%|██| 3/3 [00:30<00:00, 10.00s/it][2026-… TP0] msg`: the record is the
            // text after the last tqdm bar (the general path reads its envelope as the fixed-
            // offset one would)
            let rest = after_progress_bar(line).unwrap_or(line);
            let (s, outer_ts) = strip_wrappers(rest);
            let (ts, ranks, msg, enveloped) = match envelope(s) {
                Some((ts, ranks, msg)) => (ts, ranks, msg, true),
                None => match outer_ts {
                    // `2025-10-20T03:02:22Z INFO 31223 [DP3 TP3 file.py:222] msg` style, and
                    // the tracing form `2026-01-05T08:00:00.123Z  INFO module.func: msg`
                    Some(_) => {
                        let (ranks, msg) =
                            match alt((after_timestamp, level_body)).parse(s.as_bytes()) {
                                Ok((rest, ranks)) => (ranks, str_tail(s, rest)),
                                Err(_) => (RankTags::default(), s),
                            };
                        (None, ranks, msg, !ranks.is_empty())
                    }
                    None => (None, RankTags::default(), s, false),
                },
            };
            (s, outer_ts, ts, ranks, msg, enveloped)
        }
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
    if !cache.no_esc {
        msg = trim_trailing_ansi(msg);
    }
    rec.message = msg;
    dispatch(msg, &mut rec.event, &mut cache.keys);
    if let Event::Batch(b) = &rec.event {
        if fast_env && cache.no_esc {
            let m = msg.as_ptr() as usize - line.as_ptr() as usize;
            cache.layouts.learn(line, m, rec.ranks, b);
        }
        return;
    }
    if matches!(rec.event, Event::Malformed { .. }) {
        return;
    }
    // `s` and `msg` are parts of `line`: a needle missing from `line` is missing from both.
    // "atc" is in `atchdog timeout` and in `batch`, "sfe" in `ransfer failed` and
    // `KVTransferError`; one vector pass for both spares the longer searches on most lines.
    let (atc, sfe) = crate::scan::has_atc_sfe(line.as_bytes());
    // an access line after a plain stamp, with no `atc` (so no batch marker is looked for
    // below): its layout is kept (`batch/layout.rs`)
    if let Event::HttpAccess(a) = &rec.event
        && fast_env
        && cache.no_esc
        && !atc
    {
        let m = msg.as_ptr() as usize - line.as_ptr() as usize;
        cache.layouts.learn_access(line, m, rec.ranks, a);
        return;
    }
    if matches!(rec.event, Event::Other) && (enveloped || rec.timestamp.is_some()) {
        fallback_scan(msg, atc, sfe, &mut rec.event);
    }
    // a request refused for its length, quoted anywhere (a log message, a traceback's
    // `ValueError:`, an error body)
    // (a line that holds a batch marker is the batch line's, below: these two take only
    // lines without one)
    let no_marker = || !atc || find_batch_marker(line.as_bytes()).is_none();
    if matches!(rec.event, Event::Other)
        && let Some(c) = crate::access::parse_context_rejection(msg)
        && no_marker()
    {
        rec.event = Event::ContextRejected(c);
        return;
    }
    // a graph capture's progress bar after others on one `\r`-joined line, unstamped
    if matches!(rec.event, Event::Other)
        && !enveloped
        && rec.timestamp.is_none()
        && let Some(g) = events::parse_capture_progress(msg)
        && no_marker()
    {
        rec.event = Event::GraphCapture(g);
        return;
    }
    // A paste that begins mid-line: the tail of a decode line, its head (stamp, ranks,
    // `Decode batch. #running-`) cut off.
    if matches!(rec.event, Event::Other)
        && !enveloped
        && rec.timestamp.is_none()
        && let Some(b) = batch::parse_cut_decode(msg)
    {
        rec.event = Event::Batch(b);
        return;
    }
    if atc
        && !matches!(rec.event, Event::Batch(_) | Event::Malformed { .. })
        && let Some((s, p)) = find_batch_marker(s.as_bytes())
            .map(|p| (s, p))
            // a marker inside a stripped wrapper (`(Name pid=…Decode batch…)`) still counts
            .or_else(|| {
                if s.len() == line.len() {
                    return None; // `s` is `line`: searched already
                }
                find_batch_marker(line.as_bytes()).map(|p| (line, p))
            })
    {
        // Robust path: the batch marker is somewhere in the line (unknown envelope, a lost `[`,
        // a wrapper we do not know). Parse from the marker; recover stamp and ranks from the
        // text before it.
        let sub = trim_trailing_ansi(&s[p..]);
        if sub.starts_with('n') {
            batch::parse_legacy_fill_into(sub, &mut rec.event);
        } else {
            batch::parse_standard_into(sub, &mut rec.event, &mut cache.keys);
        }
        rec.message = sub;
        lenient_prefix(&s[..p], rec);
    }
}

/// Sets `out` (which is `Event::Other` on entry) from the message head.
#[inline]
fn dispatch<'a>(msg: &'a str, out: &mut Event<'a>, keys: &mut batch::KeyOrder) {
    let Some(&first) = msg.as_bytes().first() else {
        return;
    };
    // the first byte picks the arm (a jump table), then one prefix compare
    let starts = |p: &str| msg.starts_with(p);
    let retraction = || events::parse_retraction(msg).map_or(Event::Other, Event::Retraction);
    *out = match first {
        b'D' if starts("Decode batch") => return batch::parse_standard_into(msg, out, keys),
        b'D' if starts("Decode out of memory happened") => retraction(),
        b'P' if starts("Prefill batch") || starts("Prefil batch") => {
            return batch::parse_standard_into(msg, out, keys);
        }
        // The scheduler watchdog (`utils/watchdog.py`) dumps every scheduler's stack with
        // py-spy when its timeout fires, before or instead of the `Watchdog timeout` line.
        b'P' if starts("Pyspy dump for PID") => Event::WatchdogTimeout(msg),
        b'P' if starts("Pyspy failed to dump") => Event::PyspyFailed,
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
        b'E' if starts("Entering DeepGEMM JIT Pre-Compile session") => Event::JitCompile(msg),
        b'E' if starts("Engine startup timings") => {
            Event::StartupTimings(crate::timings::parse_startup_timings(msg))
        }
        b'T' if starts("Testing retraction.") => retraction(),
        b'T' if starts("Transfer failed") => Event::KvTransferFailed(msg),
        // the NIXL transfer worker's own lines before the request's status turns `Failed`
        // (`disaggregation/nixl/conn.py`), and the prefill side's failed handshake
        // (`disaggregation/prefill.py`, `pop_bootstrapped`)
        b'N' if starts("NIXL transport error for room") => Event::KvTransferFailed(msg),
        b'U' if starts("Unexpected transfer worker error for room") => Event::KvTransferFailed(msg),
        b'P' if starts("Prefill bootstrap failed for request") => Event::KvTransferFailed(msg),
        b'L' if starts("Load weight end") => {
            glued_capacity(msg).unwrap_or_else(|| Event::LoadWeightEnd(events::parse_memory(msg)))
        }
        b'M' if starts("Mamba Cache is allocated.") => {
            let n = msg.find("max_mamba_cache_size:").and_then(|i| {
                let rest = msg[i + "max_mamba_cache_size:".len()..].trim_start();
                let end = rest
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len());
                rest[..end].parse().ok()
            });
            Event::MambaCacheAllocated(n)
        }
        b'M' if starts("Max running requests is reset to ") => {
            let rest = &msg["Max running requests is reset to ".len()..];
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            Event::MaxRunningReset(rest[..digits].parse().ok())
        }
        b'M' if starts("Memory pool end") => {
            glued_capacity(msg).unwrap_or_else(|| Event::MemoryPoolEnd(events::parse_memory(msg)))
        }
        b'C' if starts("Capture ") && memmem::find(msg.as_bytes(), b"graph end").is_some() => {
            glued_capacity(msg).unwrap_or_else(|| Event::CudaGraphEnd(events::parse_memory(msg)))
        }
        b'C' if starts("Capture ") && memmem::find(msg.as_bytes(), b"graph begin").is_some() => {
            Event::GraphCapture(events::parse_capture_begin(msg))
        }
        b'C' if starts("Capturing batches (") || starts("Capturing num tokens (") => {
            events::parse_capture_progress(msg).map_or(Event::Other, Event::GraphCapture)
        }
        b'm' if starts("max_total_num_tokens=") => Event::Capacity(events::parse_capacity(msg)),
        // a launch command echoed by a launcher script, or pasted: the server's arguments
        b'c' | b'p' if starts("command=") || starts("python") => launch_command(msg),
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
        b'U' if starts("Using default MoE kernel config")
            || (starts("Using MoE kernel config")
                && memmem::find(msg.as_bytes(), b"sub-optimal").is_some()) =>
        {
            Event::MoeConfigUntuned(msg)
        }
        b'U' if starts("Use Sliding window memory pool")
            || starts("Use sliding window memory pool") =>
        {
            let (full_tokens, swa_tokens) = events::parse_swa_pool(msg);
            Event::SwaPool {
                full_tokens,
                swa_tokens,
            }
        }
        b'S' if starts("Scheduler hit an exception") => Event::SchedulerException(msg),
        b'S' if starts("SIGTERM received") => Event::Signal(crate::Signal::Sigterm),
        b'S' if starts("SIGQUIT received") => Event::Signal(crate::Signal::Sigquit),
        // The v0.4 wording of the same handler (`launch_server`, typo included).
        b'R' if starts("Received sigquit from a child proces") => {
            Event::Signal(crate::Signal::Sigquit)
        }
        b'S' if starts("Subprocess ") => match msg.split_once("crashed with exit code ") {
            Some((_, rest)) => {
                let end = rest
                    .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                    .unwrap_or(rest.len());
                Event::Signal(crate::Signal::ChildExited(rest[..end].parse().ok()))
            }
            None => Event::Other,
        },
        b'R' if (starts("ReqTimeStats(") || starts("Req Time Stats("))
            && crate::req_times::parse_req_times(msg).is_some() =>
        {
            Event::ReqTimeStats(msg)
        }
        b'T' if starts("Traceback (most recent call last)") => Event::TracebackStart,
        // uvicorn's access line: `127.0.0.1:44946 - "POST /generate HTTP/1.1" 200 OK`
        b'0'..=b'9' => {
            // written in place: the arm's value would be the whole (~300-byte) event, copied
            if let Some(a) = crate::access::parse_http_access(msg) {
                *out = Event::HttpAccess(a);
            }
            return;
        }
        // PyTorch's c10 prefix (`[rank0]:[E1218 … ProcessGroupNCCL.cpp:629] …`), an IPv6 peer
        b'[' => match crate::alarms::parse_nccl(msg) {
            Some(n) => Event::Nccl(n),
            None => crate::access::parse_http_access(msg).map_or(Event::Other, Event::HttpAccess),
        },
        b't' | b'O' | b'R' if OUT_OF_MEMORY.find(msg.as_bytes()).is_some() => {
            crate::alarms::parse_out_of_memory(msg).map_or(Event::Other, Event::OutOfMemory)
        }
        b'R' if starts("Revoking prefetch for request ") => hicache(msg),
        b'P' if starts("Prefetch") => hicache(msg),
        b'C' if starts("Creating storage backend '") => hicache(msg),
        b's' if starts("slow scheduler pass: ") => {
            crate::alarms::parse_slow_pass(msg).map_or(Event::Other, Event::SlowSchedulerPass)
        }
        b'H' if starts("Health check failed.") => crate::alarms::parse_health_check_failed(msg)
            .map_or(Event::Other, Event::HealthCheckFailed),
        b'k' if starts("kill_process_tree called") => Event::Signal(crate::Signal::KillProcessTree),
        b'N' if starts("No live scheduler processes found") => {
            Event::Signal(crate::Signal::NoLiveSchedulers)
        }
        b'S' if starts("SWAKVPool mem usage:") => {
            let (full_tokens, swa_tokens) = crate::alarms::parse_swa_kv_pool(msg);
            Event::SwaPool {
                full_tokens,
                swa_tokens,
            }
        }
        b'U' if starts("Using KV cache dtype:") => {
            Event::KvCacheDtype(msg["Using KV cache dtype:".len()..].trim())
        }
        _ => return,
    };
}

/// A HiCache storage-tier line, or `Other`.
fn hicache(msg: &str) -> Event<'_> {
    crate::alarms::parse_hicache_line(msg).map_or(Event::Other, Event::HiCache)
}

/// `command=python3 -m sglang.launch_server …` or `python -m sglang.launch_server …`: the
/// arguments after the module name ([`events::LaunchArgs`]); anything else is `Other`.
fn launch_command(msg: &str) -> Event<'_> {
    const MODULE: &[u8] = b"sglang.launch_server";
    match memmem::find(msg.as_bytes(), MODULE) {
        Some(at) => Event::LaunchCommand(events::LaunchArgs::new(str_tail(
            msg,
            &msg.as_bytes()[at + MODULE.len()..],
        ))),
        None => Event::Other,
    }
}

/// A startup memory line with the capacity summary glued to its end (two records joined by a
/// paste or a lost newline: `… avail mem=6.95 GB max_total_num_tokens=2980168, …`): the
/// capacity line, which carries the figures the diagnosis needs, with the memory figures of
/// the line it was glued to in [`events::CapacityLine::glued_memory`].
fn glued_capacity(msg: &str) -> Option<Event<'_>> {
    let (before, glued) = (
        take_until::<_, _, ()>(&b" max_total_num_tokens="[..]),
        byte(b' '),
    )
        .parse(msg.as_bytes())
        .ok()
        .map(|(rest, (before, _))| (before, rest))?;
    let memory = events::parse_memory(msg.get(..before.len())?);
    let mut cap = events::parse_capacity(str_tail(msg, glued));
    cap.glued_memory = Some(memory);
    Some(Event::Capacity(cap))
}

static BAR_END: LazyLock<memmem::FinderRev<'static>> =
    LazyLock::new(|| memmem::FinderRev::new(b"/s]["));
static BAR_END_SLOW: LazyLock<memmem::FinderRev<'static>> =
    LazyLock::new(|| memmem::FinderRev::new(b"s/it]["));

/// The text after the last tqdm progress bar of `line` (`… ?it/s]` / `… 2.74it/s]` /
/// `… 30.48s/it]`) when a bracket follows it directly: a record glued behind the bar.
fn after_progress_bar(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    // every tqdm bar has its `|` edges
    memchr::memchr(b'|', b)?;
    // `it/s][`: the needle `/s][` ends 2 bytes before the `[`; `s/it][`: 5 bytes
    let fast = BAR_END
        .rfind(b)
        .filter(|&i| i >= 2 && &b[i - 2..i] == b"it")
        .map(|i| i + 3);
    let slow = BAR_END_SLOW.rfind(b).map(|i| i + 5);
    let at = fast.max(slow)?;
    line.get(at..)
}

/// `out of memory`, searched in every message that starts with `t`, `O` or `R` (a traceback's
/// `RuntimeError: …` among them): built once, not per line.
static OUT_OF_MEMORY: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"out of memory"));
static WATCHDOG: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"atchdog timeout"));
static TRANSFER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"ransfer failed"));

/// Messages of SGLang-logged lines (with an envelope) whose keyword is not at the start, e.g.
/// `Scheduler watchdog timeout (…)` or `Decode transfer failed for request rank=…`.
/// `atc` / `sfe`: whether the line holds `atc` / `sfe` at all (when not, the searches for the
/// needles that contain them are skipped).
///
/// The event is written into `out` (which is `Event::Other` on entry and stays so when no
/// needle is found) instead of being returned: an `Event` is a few hundred bytes to move.
fn fallback_scan<'a>(msg: &'a str, atc: bool, sfe: bool, out: &mut Event<'a>) {
    let b = msg.as_bytes();
    if atc && WATCHDOG.find(b).is_some() {
        *out = Event::WatchdogTimeout(msg);
    } else if atc
        && let Some(n) = crate::alarms::parse_nccl(msg)
            .filter(|n| n.kind == crate::alarms::NcclKind::CollectiveTimeout)
    {
        *out = Event::Nccl(n);
    } else if sfe && (TRANSFER.find(b).is_some() || memmem::find(b, b"KVTransferError").is_some()) {
        *out = Event::KvTransferFailed(msg);
    }
}

/// Skips ANSI escape sequences (`ESC [ … final`) and spaces at the start.
#[inline]
fn skip_ansi(s: &str) -> &str {
    match s.as_bytes() {
        // the usual single space after the envelope's `]`
        [b' ', c, ..] if !matches!(c, b' ' | b'\t' | 0x1b) => &s[1..],
        [b' ' | b'\t' | 0x1b, ..] => skip_ansi_slow(s),
        _ => s,
    }
}

fn skip_ansi_slow(s: &str) -> &str {
    let b = s.as_bytes();
    match many0_count(space_or_ansi).parse(b) {
        Ok((rest, _)) => str_tail(s, rest),
        Err(_) => s,
    }
}

/// One space, tab, ANSI escape sequence (`ESC [ params final`; unterminated: to the end) or
/// lone ESC.
fn space_or_ansi(i: &[u8]) -> PResult<'_, ()> {
    let is_final = |c: u8| (0x40..=0x7e).contains(&c);
    alt((
        value((), byte_if(|c| c == b' ' || c == b'\t')),
        value(
            (),
            (
                byte(0x1b),
                byte(b'['),
                take_till(is_final),
                opt(byte_if(is_final)),
            ),
        ),
        value((), byte(0x1b)),
    ))
    .parse(i)
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
/// `> `, Ray actor tags `(Name pid=N[, ip=…]) `, docker-compose `service-1  | `, a waiting
/// launcher's progress dots `....` glued to the line, and a container runtime's ISO stamp
/// `2025-…T…Z ` (returned as the outer timestamp). At most 8
/// wrappers are taken.
fn strip_wrappers(mut s: &str) -> (&str, Option<Timestamp>) {
    let mut outer = None;
    for _ in 0..8 {
        s = skip_ansi(s);
        match wrapper(s.as_bytes()) {
            Ok((rest, ts)) => {
                if ts.is_some() {
                    outer = ts;
                }
                s = str_tail(s, rest);
            }
            Err(_) => break,
        }
    }
    (s, outer)
}

/// One wrapper in front of a line (see [`strip_wrappers`]); the value is the ISO stamp of a
/// container runtime's prefix.
fn wrapper(i: &[u8]) -> PResult<'_, Option<Timestamp>> {
    alt((
        value(None, byte(b'>')),
        value(None, ray_tag),
        terminated(iso_t_timestamp, peek(byte_if(|c| c == b' ' || c == b'\t'))).map(Some),
        value(None, compose_prefix),
        // a launcher's progress dots printed while it waited, without a newline, before the
        // server's first lines (`....[2026-01-04 07:35:49] INFO: …`)
        value(
            None,
            terminated(take_while1(|c: u8| c == b'.'), peek(byte(b'['))),
        ),
    ))
    .parse(i)
}

/// `(SchedulerActor pid=1234, ip=10.0.0.5) `: a Ray actor's tag, its `)` within the first
/// 160 bytes.
fn ray_tag(i: &[u8]) -> PResult<'_, ()> {
    let name = take_while1(|c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':');
    let (rest, _) = (
        byte(b'('),
        name,
        byte(b' '),
        tag(&b"pid="[..]),
        take_till(|c| c == b')'),
        byte(b')'),
    )
        .parse(i)?;
    if offset_of(i, rest) > 160 {
        return fail();
    }
    Ok((rest, ()))
}

/// docker-compose `sglang-1  | ` / `sglang  | `: a service name of at most 64 bytes, spaces,
/// `|` and one optional space.
fn compose_prefix(i: &[u8]) -> PResult<'_, ()> {
    let name = verify(
        take_while1(|c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')),
        |n: &[u8]| n.len() <= 64,
    );
    value((), (name, byte(b' '), spaces, byte(b'|'), opt(byte(b' ')))).parse(i)
}

/// The SGLang envelope at the start of `s`:
/// - `[TS( TAG)*] msg` (also `[ DP15 TP15] msg`, `[TS]`, ms stamps, `[TS][file.py:N][INFO]: msg`),
/// - `TS( TAG)*] msg` (a paste that lost the `[`),
/// - `TS LEVEL PID [TAG… file.py:N] msg` (custom logging formats),
/// - `TS msg`.
///
/// Returns `(timestamp, ranks, message)`; `None` when `s` has no recognisable envelope.
fn envelope(s: &str) -> Option<(Option<Timestamp>, RankTags, &str)> {
    let stamped = (timestamp, after_timestamp).map(|(t, r)| (Some(t), r));
    let (rest, (ts, ranks)) = alt((bracket_envelope, stamped)).parse(s.as_bytes()).ok()?;
    Some((ts, ranks, str_tail(s, rest)))
}

/// What follows a bare timestamp: `( TAG)*] msg`, `LEVEL [PID] [TAG… file:N] msg`, or
/// ` msg`; the rest is the message.
fn after_timestamp(i: &[u8]) -> PResult<'_, RankTags> {
    alt((lost_bracket_tags, level_prefix)).parse(i)
}

/// `( TAG)*] msg`: the envelope's bracket lost its opening `[` (its `]` within 80 bytes).
fn lost_bracket_tags(i: &[u8]) -> PResult<'_, RankTags> {
    let (rest, inner) = terminated(
        verify(take_till(|c| c == b']'), |t: &[u8]| {
            t.len() < 80 && memchr::memchr(b'[', t).is_none()
        }),
        byte(b']'),
    )
    .parse(i)?;
    let mut ranks = RankTags::default();
    if !all_tokens(inner, |t| ranks.apply_token_bytes(t)) {
        return fail();
    }
    Ok((rest, ranks))
}

/// ` LEVEL[:] [PID] [[TAG… file:N]][:] msg` after a timestamp, or ` msg`, or nothing.
fn level_prefix(i: &[u8]) -> PResult<'_, RankTags> {
    match i.first() {
        Some(b' ' | b'\t') => level_body(skip_ws(i)),
        None => Ok((i, RankTags::default())),
        _ => fail(),
    }
}

/// `LEVEL[:] [PID] [[TAG… file:N]][:] [target: ]msg` (the level optional: without it the
/// input is the message). `target` is a tracing subscriber's module path (`dynamo.sglang:`,
/// `sglang::srt:`), recognised by a `.` or `::` in it.
fn level_body(w: &[u8]) -> PResult<'_, RankTags> {
    let mut ranks = RankTags::default();
    let mut level = terminated(
        alt((
            tag(&b"INFO"[..]),
            tag(&b"WARNING"[..]),
            tag(&b"ERROR"[..]),
            tag(&b"DEBUG"[..]),
            tag(&b"CRITICAL"[..]),
            tag(&b"WARN"[..]),
        )),
        peek(byte_if(|c| c == b' ' || c == b':')),
    );
    let Ok((w, _)) = level.parse(w) else {
        return Ok((w, ranks));
    };
    let w = skip_ws(skip_colons(w));
    let pid = terminated(digit1, peek(byte(b' ')));
    let w = skip_ws(opt(pid).parse(w).map_or(w, |(r, _)| r));
    let mut tags = delimited(
        byte(b'['),
        verify(take_till(|c| c == b']'), |t: &[u8]| t.len() < 159),
        byte(b']'),
    );
    let w = match tags.parse(w) {
        Ok((r, inner)) => {
            all_tokens(inner, |t| ranks.apply_token_bytes(t));
            skip_ws(skip_colons(r))
        }
        Err(_) => w,
    };
    let mut target = terminated(
        verify(take_till1(|c| c == b' '), |t: &[u8]| {
            let Some(path) = t.strip_suffix(b":") else {
                return false;
            };
            path.iter()
                .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':'))
                && (memchr::memchr(b'.', path).is_some()
                    || memchr::memmem::find(path, b"::").is_some())
        }),
        byte(b' '),
    );
    let w = match target.parse(w) {
        Ok((r, _)) => skip_ws(r),
        Err(_) => w,
    };
    Ok((w, ranks))
}

/// `[TS( TAG)*]` (its `]` within the first 96 bytes) with optional attached `[…]` groups
/// (`[file.py:424][INFO]:`) and an optional `:`. Without a stamp every token must be a rank
/// tag and there must be one.
fn bracket_envelope(i: &[u8]) -> PResult<'_, (Option<Timestamp>, RankTags)> {
    let (mut rest, inner) = delimited(
        byte(b'['),
        verify(take_till(|c| c == b']'), |t: &[u8]| t.len() <= 94),
        byte(b']'),
    )
    .parse(i)?;
    let (tokens, ts) = opt(timestamp).parse(skip_ws(inner))?;
    let mut ranks = RankTags::default();
    if !all_tokens(tokens, |t| ranks.apply_token_bytes(t) || ts.is_some()) {
        return fail();
    }
    if ts.is_none() && ranks.is_empty() {
        return fail();
    }
    // attached groups such as `[scheduler_metrics_mixin.py:424][INFO]`
    let mut group = delimited(
        byte(b'['),
        verify(take_till(|c| c == b']'), |t: &[u8]| t.len() <= 126),
        byte(b']'),
    );
    for _ in 0..4 {
        let Ok((r, inner)) = group.parse(rest) else {
            break;
        };
        all_tokens(inner, |t| ranks.apply_token_bytes(t));
        rest = r;
    }
    let rest = opt(byte(b':')).parse(rest)?.0;
    Ok((rest, (ts, ranks)))
}

/// `[gpu=N] msg` / `[gpu_id=N] msg` (the `]` within 32 bytes, every token a rank tag) → the
/// rank and the rest.
fn bracket_ranks(s: &str) -> Option<(RankTags, &str)> {
    let (rest, inner) = delimited(
        byte(b'['),
        verify(take_till(|c| c == b']'), |t: &[u8]| t.len() <= 30),
        byte(b']'),
    )
    .parse(s.as_bytes())
    .ok()?;
    let mut r = RankTags::default();
    if !all_tokens(inner, |t| r.apply_token_bytes(t)) {
        return None;
    }
    Some((r, str_tail(s, skip_ws(rest))))
}

/// Uvicorn's / Python's level prefix (`INFO:     `, `WARNING:  `) in front of a message.
#[inline]
fn skip_level(msg: &str) -> &str {
    // the first two letters of the levels below (all upper case: `Decode batch` is no level)
    if !matches!(
        msg.as_bytes(),
        [b'I' | b'W' | b'E' | b'D' | b'C', b'A'..=b'Z', ..]
    ) {
        return msg;
    }
    let level = alt((
        tag(&b"INFO:"[..]),
        tag(&b"WARNING:"[..]),
        tag(&b"ERROR:"[..]),
        tag(&b"DEBUG:"[..]),
        tag(&b"CRITICAL:"[..]),
    ));
    match preceded(level, ws).parse(msg.as_bytes()) {
        Ok((rest, _)) => str_tail(msg, rest),
        Err(_) => msg,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of every test log, parsed in order with the caches and fast paths of a
    /// reader, gives the same record as the general path alone; so do mutated copies of the
    /// lines (a byte dropped, doubled or replaced at several places), which exercise the points
    /// where a fast path must give up.
    #[test]
    fn fast_paths_match_the_general_path() {
        let files: Vec<_> = crate::test_data::files()
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        assert!(files.len() >= 20, "{files:?}");
        let mut fast = LineCache::new(true);
        let mut general = LineCache::new(false);
        let (mut lines, mut batch) = (0usize, 0usize);
        for f in &files {
            let data = std::fs::read(f).unwrap();
            for raw in data.split(|&c| c == b'\n') {
                let mut variants = vec![raw.to_vec()];
                for at in [raw.len() / 3, raw.len() / 2, raw.len() * 4 / 5] {
                    if at < raw.len() {
                        let mut v = raw.to_vec();
                        v.remove(at);
                        variants.push(v);
                        let mut v = raw.to_vec();
                        v.insert(at, raw[at]);
                        variants.push(v);
                        for c in [b' ', b',', b':', b'=', b'x', b'9'] {
                            let mut v = raw.to_vec();
                            v[at] = c;
                            variants.push(v);
                        }
                    }
                }
                for v in &variants {
                    let a = parse_line_cached(v, 1, &mut fast);
                    let b = parse_line_cached(v, 1, &mut general);
                    assert_eq!(a, b, "{}: {:?}", f.display(), String::from_utf8_lossy(v));
                    // the fast splitter's screening never hides a value the general one
                    // (which looks at every checked key) rejects
                    if let (Event::Batch(x), Event::Batch(y)) = (&a.event, &b.event) {
                        let rx: Vec<_> = x.rejected_fields().collect();
                        let ry: Vec<_> = y.rejected_fields().collect();
                        assert_eq!(rx, ry, "{}: {:?}", f.display(), String::from_utf8_lossy(v));
                        // nor does its strict-form flag hide a `name=` part (the hybrid pools'
                        // `full=` / `swa=` values) that the general splitter's line has
                        let parts = |l: &crate::BatchLine<'_>| {
                            let bits = |x: Option<f64>| x.map(f64::to_bits);
                            (
                                l.num_token(),
                                l.num_swa_token(),
                                bits(l.token_usage()),
                                bits(l.swa_token_usage()),
                            )
                        };
                        assert_eq!(
                            parts(x),
                            parts(y),
                            "{}: {:?}",
                            f.display(),
                            String::from_utf8_lossy(v)
                        );
                    }
                    if let Ok(s) = std::str::from_utf8(v)
                        && !s.contains('\r')
                    {
                        fast.no_esc = !s.contains('\u{1b}');
                        let c = parse_clean_line(s, 1, &mut fast);
                        fast.no_esc = false;
                        assert_eq!(c, b, "{}: {s:?}", f.display());
                    }
                    lines += 1;
                    batch += usize::from(matches!(a.event, Event::Batch(_)));
                }
            }
        }
        assert!(lines > 100_000 && batch > 20_000, "{lines} {batch}");
    }
}

#[cfg(test)]
mod cut_start_tests {
    use super::*;
    use crate::BatchForm;

    /// The first line of a real paste (real-3/054, sglang ~0.4.3, 16×A100) begins mid-line:
    /// the head `[… TP0] Decode batch. #running-` was cut off.
    const CUT: &str = "req: 229, #token: 55875, token usage: 0.18, gen throughput (token/s): 505.16, largest-len: 0, #queue-req: 28,                                                                    ";

    #[test]
    fn a_decode_line_cut_at_its_start_is_read() {
        let r = parse_line(CUT.as_bytes(), 1);
        let Event::Batch(b) = &r.event else {
            panic!("{:?}", r.event)
        };
        assert_eq!(b.form, BatchForm::CutStart);
        assert_eq!(b.running_req(), Some(229));
        assert_eq!(b.num_token(), Some(55875));
        assert_eq!(b.token_usage(), Some(0.18));
        assert_eq!(b.gen_throughput(), Some(505.16));
        assert_eq!(b.queue_req(), Some(28));
        assert_eq!(r.timestamp, None);
        // a longer tail of the key is read the same way
        let r = parse_line(
            b"ning-req: 7, #token: 10, token usage: 0.00, gen throughput (token/s): 1.00",
            2,
        );
        assert!(matches!(&r.event, Event::Batch(b) if b.running_req() == Some(7)));
    }

    #[test]
    fn only_a_tail_of_the_running_key_before_token_is_a_cut_line() {
        for line in [
            // not a tail of `#running-req`
            "queue-req: 229, #token: 55875, gen throughput (token/s): 505.16",
            // no `#token` after it
            "req: 229, token usage: 0.18, gen throughput (token/s): 505.16",
            // no gen throughput: too little to call it a decode line
            "req: 229, #token: 55875, token usage: 0.18",
            // a value that is not a count
            "req: many, #token: 55875, gen throughput (token/s): 505.16",
        ] {
            let r = parse_line(line.as_bytes(), 1);
            assert!(matches!(r.event, Event::Other), "{line}: {:?}", r.event);
        }
        // only the `#` lost is still a tail of the key
        let r = parse_line(
            b"running-req: 2, #token: 5, gen throughput (token/s): 1.0",
            1,
        );
        assert!(
            matches!(&r.event, Event::Batch(b) if b.form == BatchForm::CutStart && b.running_req() == Some(2)),
            "{:?}",
            r.event
        );
        // a stamped line is never a cut one: its head is there
        let r = parse_line(
            b"[2025-03-10 22:30:44] req: 229, #token: 5, gen throughput (token/s): 1.0",
            1,
        );
        assert!(!matches!(r.event, Event::Batch(_)), "{:?}", r.event);
    }

    /// real/065 (a PD prefill node, NIXL over EFA): the transfer worker's lines, the prefill
    /// side's failed transfer, each a transfer failure with the side its words name.
    #[test]
    fn the_transfer_failures_of_a_pd_prefill_node() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/real/065-nixl-i1983-pd-prefill-transfer-disconnect.log"
        ))
        .expect("real/065");
        let failures: Vec<(usize, Option<crate::TransferSide>)> = text
            .lines()
            .enumerate()
            .filter_map(
                |(i, l)| match parse_line(l.as_bytes(), i as u64 + 1).event {
                    Event::KvTransferFailed(m) => Some((i + 1, crate::transfer_side(m))),
                    _ => None,
                },
            )
            .collect();
        use crate::TransferSide::Prefill;
        assert_eq!(
            failures,
            [
                (6, None),
                (7, None),
                (8, None),
                (9, None),
                (10, Some(Prefill)),
                (11, Some(Prefill)),
                (12, Some(Prefill)),
                (13, Some(Prefill)),
                (17, None),
            ]
        );
        // the decode side's wording (real-3/012)
        assert_eq!(
            crate::transfer_side(
                "Decode transfer failed for request rank=2 req.rid='3f2a' req.bootstrap_room=7 with exception KVTransferError"
            ),
            Some(crate::TransferSide::Decode)
        );
    }

    /// real-4/101's stop: SIGTERM, a child killed by it (exit -15), the SIGQUIT that follows.
    #[test]
    fn the_signals_of_a_stop() {
        fn ev(l: &str) -> Event<'_> {
            parse_line(l.as_bytes(), 1).event
        }
        assert_eq!(
            ev(
                "[2026-08-02 00:17:43] SIGTERM received. signum=None frame=None. Draining requests and shutting down..."
            ),
            Event::Signal(crate::Signal::Sigterm)
        );
        assert_eq!(
            ev(
                "[2026-08-02 00:17:43] Subprocess detokenizer (pid=31379) crashed with exit code -15. Triggering SIGQUIT for cleanup..."
            ),
            Event::Signal(crate::Signal::ChildExited(Some(-15)))
        );
        assert_eq!(
            ev(
                "[2026-08-02 00:17:43] SIGQUIT received. signum=None, frame=None. It usually means one child failed."
            ),
            Event::Signal(crate::Signal::Sigquit)
        );
        // real/049:9, the v0.4 wording after eight watchdog timeouts
        assert_eq!(
            ev(
                "[2025-03-09 00:57:20] Received sigquit from a child proces. It usually means the child failed."
            ),
            Event::Signal(crate::Signal::Sigquit)
        );
        // a subprocess line of another kind is not a signal
        assert_eq!(
            ev("[2026-08-02 00:17:43] Subprocess tokenizer started"),
            Event::Other
        );
    }
}
