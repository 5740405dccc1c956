//! Line layouts: a batch or access line's bytes with every digit read as `0`, learnt from a
//! line the general path read, and recognised in the next lines by one vector pass.
//!
//! A scheduler prints line after line of one form, `[stamp TP0] Decode batch. #running-req: 6,
//! #token: 880, token usage: 0.00, cuda graph: True, gen throughput (token/s): 831.69,
//! #queue-req: 146`, and in a window of minutes its values keep their lengths: the line with
//! its digits turned into `0` repeats exactly. Its *layout* is that text (from byte 20, after
//! `[` and the 19-byte stamp), with what the record of such a line holds apart from the stamp:
//! rank tags, message offset, kind, the fields' spans, the key slots and the splitter's
//! screening bits. A later line whose digit-normalised text, raw rank-tag bytes and length
//! are a layout's gets that layout's record: one pass normalises and hashes the line (AVX2,
//! 32 bytes a step, where the CPU has it; a byte loop elsewhere, tested equal), one compare
//! per 32 bytes confirms it, and no envelope search, dispatch, key prediction or field scan
//! runs.
//!
//! Access lines (`[stamp] INFO:     peer - "POST /generate HTTP/1.1" 200 OK`, one per request)
//! have layouts too ([`Layouts::learn_access`]): the access scan decides on the class of each
//! byte (digit, space, quote, upper case), which the normalised text keeps, and only the
//! status's value is read again from each line's digits.
//!
//! **The same record.** A batch layout is kept only from a line with no digit outside its values
//! from the message on, so two lines of one layout have the same bytes everywhere except in
//! their values, whose digits may differ but whose other bytes (`.`, letters, `%`) are the
//! same. Everything the general path decides is decided on bytes that are equal: the envelope
//! on bytes 20 to the message (compared raw, rank digits included), the dispatch, the batch
//! head and the keys on the message's text, and the splitter cuts each value where its run
//! of digits and dots or of value bytes ends, which depends on which bytes are digits, not
//! on which digits. The one screening bit that reads a digit's value (a fraction is sound
//! only as `0.…`) is recomputed from the line. The stamp is read by the caller as the
//! envelope reads it. `grammar_check::lines_agree` compares the records with and without
//! layouts on every line the tests and the `parse_line` fuzz target give it.

use super::{
    BatchForm, BatchKind, BatchLine, FAST_SAFE, MAX_FIELDS, N_KNOWN, SAFE_FRACTION, Span,
    UNCHECKED, UsualPlan, value_look,
};
use crate::{Event, RankTags};

/// Lines this long (bytes) or longer have no layout.
const MAX_LINE: usize = 256;
/// Shortest line with a layout (bytes): bytes 20..36 (rank tags, batch head) are hashed raw.
const MIN_LINE: usize = 36;
/// Longest raw envelope part kept (bytes 20 to the message; `] ` and the rank tags).
const MAX_ENV: usize = 64;
/// Sets of the layout table (a power of two) and layouts per set (most recently used first).
/// A DP/TP log of one server holds a few hundred layouts in a window; the seed-7 sample holds
/// 1,272 batch layouts, which read 108,397 of its 109,730 batch lines (the rest are each
/// layout's first line).
const SETS: usize = 4096;
const WAYS: usize = 2;
/// Most fields whose screening bit reads a digit's value (a fraction's `0.`) in one layout.
const MAX_ZERO_DOT: usize = 4;
/// Lines offered to [`Layouts::learn`] or [`Layouts::learn_access`] before one is kept: a
/// one-line parse ([`crate::parse_line`]) never allocates the table.
const LEARN_AFTER: u32 = 1;
/// Layouts kept before their use is judged, and the lines each must have read on average:
/// a log whose lines seldom repeat a layout (values of ever-changing lengths) would pay a
/// normalisation and a learning on most lines, so its reader stops using layouts (the seed-7
/// sample's 1,272 layouts read 85 lines each).
const JUDGE_AFTER: u64 = 1024;
const HITS_PER_LAYOUT: u64 = 4;

/// One learnt layout.
struct Layout {
    /// Line length (bytes).
    len: u16,
    /// Offset of the message (the batch head, or an access line's peer) in the line.
    msg: u8,
    kind: BatchKind,
    ranks: RankTags,
    /// The raw bytes 20..msg (rank tags and `] `, or an access line's `] INFO:     `).
    env: [u8; MAX_ENV],
    /// The raw bytes 20..36 (`raw_head`) and the mask of those of them in 20..msg: the whole
    /// envelope part when it is at most 16 bytes (the usual ` TP0] `, ` DP1 TP4] `).
    env_head: (u64, u64),
    env_mask: (u64, u64),
    /// The line from byte 20 with its digits as `0`, zero-padded to whole 32-byte chunks.
    norm: [u8; NORM],
    fields: u8,
    spans: [Span; MAX_FIELDS],
    slot: [u8; N_KNOWN],
    known: u8,
    /// The splitter's screening bits (`BatchLine::check`) that do not depend on a digit's
    /// value.
    check: u64,
    /// Screening bits that do: `(offset of the value's first byte in the line, key id)`; the
    /// bit is clear when that byte is `0`, else set (`zero_dots` of them).
    zero_dot: [(u8, u8); MAX_ZERO_DOT],
    zero_dots: u8,
    /// Where the usual line's readings lie ([`UsualPlan::of`] the learnt line).
    plan: UsualPlan,
    /// An access line's layout (the batch fields above unused): its slices, relative to the
    /// message.
    access: Option<AccessSpans>,
}

/// Where an access line's method, path and status digits lie in its message (byte ranges).
#[derive(Clone, Copy)]
struct AccessSpans {
    method: (u8, u8),
    path: (u8, u8),
    digits: (u8, u8),
}

/// The layouts one reader has learnt (see the module doc), and the normalised copy of the line
/// being recognised.
pub(crate) struct Layouts {
    enabled: bool,
    /// Lines offered to [`Layouts::learn`] or [`Layouts::learn_access`] (up to
    /// [`LEARN_AFTER`]).
    seen: u32,
    /// [`SETS`] × [`WAYS`], allocated at the first layout kept.
    table: Vec<[Option<Box<Layout>>; WAYS]>,
    /// The line being recognised from byte 20, digits as `0`, then zeros.
    norm: [u8; NORM],
    /// The line `norm` holds (its address and length; 0: none) and its chunks and hash, for
    /// [`Layouts::learn`] after a miss of the same line.
    last: (usize, usize, usize, u64),
    /// [`has_avx2`].
    avx2: bool,
    /// [`head_bit`] of the raw bytes 20..28 of every layout kept: a line whose bit is clear
    /// (a traceback, a line of a kind never kept) has none, without being normalised.
    heads: u64,
    /// Lines read by a layout.
    pub(crate) hits: u64,
    /// Layouts kept.
    kept: u64,
}

impl Clone for Layouts {
    /// A fresh, empty table: a clone reads its first lines by the general path.
    fn clone(&self) -> Self {
        Layouts::new(self.enabled)
    }
}

impl std::fmt::Debug for Layouts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.table.iter().flatten().flatten().count();
        f.debug_struct("Layouts")
            .field("enabled", &self.enabled)
            .field("kept", &kept)
            .finish()
    }
}

/// Bytes of one normalisation step (a chunk).
const STEP: usize = 32;
/// Size of a normalised-line buffer: a line's body in whole chunks.
const NORM: usize = MAX_LINE + STEP;

/// Writes `body` (shorter than [`MAX_LINE`]) with every ASCII digit as `0` into `out` in
/// whole 32-byte chunks (zeros past its end) and returns the chunks and their fold: per
/// 64-bit lane `l` of a chunk, `acc[l] = 2 * acc[l] ^ word`, from zero, the four lanes then
/// paired as `(acc[0] ^ acc[2] <<< 29, acc[1] ^ acc[3] <<< 29)`. With AVX2 (`avx2`: the CPU
/// has it, [`has_avx2`]) one step a chunk, else a byte loop; both give the same.
#[inline(always)]
fn normalize_body(body: &[u8], out: &mut [u8; NORM], avx2: bool) -> (usize, u64, u64) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: the CPU supports AVX2 (`avx2` is `has_avx2()`).
        return unsafe { normalize_body_avx2(body, out) };
    }
    let _ = avx2;
    normalize_body_base(body, out)
}

/// Whether the CPU runs AVX2 (asked once per [`Layouts`]).
pub(super) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// [`normalize_body`] with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn normalize_body_avx2(body: &[u8], out: &mut [u8; NORM]) -> (usize, u64, u64) {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_extract_epi64,
        _mm256_loadu_si256, _mm256_min_epu8, _mm256_set1_epi8, _mm256_setzero_si256,
        _mm256_storeu_si256, _mm256_sub_epi8, _mm256_xor_si256,
    };
    let n = body.len();
    if !(STEP..MAX_LINE).contains(&n) {
        return normalize_body_base(body, out);
    }
    let full = n / STEP;
    let zero_char = _mm256_set1_epi8(b'0' as i8);
    let nine = _mm256_set1_epi8(9);
    // t = c - '0' (wrapping): a digit is a byte with t <= 9, and a digit minus its t is '0'
    let norm = |v: __m256i| {
        let t = _mm256_sub_epi8(v, zero_char);
        let digit = _mm256_cmpeq_epi8(_mm256_min_epu8(t, nine), t);
        _mm256_sub_epi8(v, _mm256_and_si256(t, digit))
    };
    let src = body.as_ptr();
    let dst = out.as_mut_ptr();
    let mut acc = _mm256_setzero_si256();
    for k in 0..full {
        // SAFETY: chunk `k < full = n / STEP` lies in `body`, and in `out` (NORM > n).
        unsafe {
            let r = norm(_mm256_loadu_si256(src.add(STEP * k) as *const __m256i));
            _mm256_storeu_si256(dst.add(STEP * k) as *mut __m256i, r);
            acc = _mm256_xor_si256(_mm256_add_epi64(acc, acc), r);
        }
    }
    let chunks = if n.is_multiple_of(STEP) {
        full
    } else {
        // the last 32 bytes of the body, normalised and stored where they lie (over the end
        // of the chunk before, which holds the same bytes), zeros after them, and the last
        // chunk read back
        // SAFETY: `n - STEP .. n` lies in `body` (n >= STEP) and in `out`; the zeros go to
        // `n .. n + STEP` and the chunk is read from `STEP * full .. STEP * full + STEP`, both
        // inside `out` (n < MAX_LINE, NORM = MAX_LINE + STEP).
        unsafe {
            let r = norm(_mm256_loadu_si256(src.add(n - STEP) as *const __m256i));
            _mm256_storeu_si256(dst.add(n - STEP) as *mut __m256i, r);
            _mm256_storeu_si256(dst.add(n) as *mut __m256i, _mm256_setzero_si256());
            let r = _mm256_loadu_si256(dst.add(STEP * full) as *const __m256i);
            acc = _mm256_xor_si256(_mm256_add_epi64(acc, acc), r);
        }
        full + 1
    };
    let lane = |l| match l {
        0 => _mm256_extract_epi64::<0>(acc),
        1 => _mm256_extract_epi64::<1>(acc),
        2 => _mm256_extract_epi64::<2>(acc),
        _ => _mm256_extract_epi64::<3>(acc),
    } as u64;
    (
        chunks,
        lane(0) ^ lane(2).rotate_left(29),
        lane(1) ^ lane(3).rotate_left(29),
    )
}

/// The pair [`normalize_body`] returns, from the four lanes' folds as bytes.
#[inline(always)]
fn fold_lanes(chunks: usize, lanes: [u8; 32]) -> (usize, u64, u64) {
    let lane = |l: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&lanes[8 * l..8 * l + 8]);
        u64::from_le_bytes(w)
    };
    (
        chunks,
        lane(0) ^ lane(2).rotate_left(29),
        lane(1) ^ lane(3).rotate_left(29),
    )
}

/// [`normalize_body`], byte by byte.
fn normalize_body_base(body: &[u8], out: &mut [u8; NORM]) -> (usize, u64, u64) {
    let chunks = body.len().min(MAX_LINE).div_ceil(STEP);
    let mut acc = [0u64; 4];
    for k in 0..chunks {
        let mut c = [0u8; STEP];
        for (j, d) in c.iter_mut().enumerate() {
            let b = body.get(STEP * k + j).copied().unwrap_or(0);
            *d = if b.is_ascii_digit() { b'0' } else { b };
        }
        if let Some(o) = out.get_mut(STEP * k..STEP * k + STEP) {
            o.copy_from_slice(&c);
        }
        for (l, a) in acc.iter_mut().enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&c[8 * l..8 * l + 8]);
            *a = a.wrapping_add(*a) ^ u64::from_le_bytes(w);
        }
    }
    let mut lanes = [0u8; 32];
    for (l, a) in acc.iter().enumerate() {
        lanes[8 * l..8 * l + 8].copy_from_slice(&a.to_le_bytes());
    }
    fold_lanes(chunks, lanes)
}

/// The raw bytes 20..36 of `b` (rank tags and the batch head), as two words.
#[inline(always)]
fn raw_head(b: &[u8]) -> (u64, u64) {
    let w = |i: usize| {
        b.get(i..i + 8)
            .and_then(|s| <[u8; 8]>::try_from(s).ok())
            .map_or(0, u64::from_le_bytes)
    };
    (w(20), w(28))
}

/// The bit of [`Layouts::heads`] for raw head word `w`.
#[inline(always)]
fn head_bit(w: u64) -> u64 {
    1 << (w.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58)
}

/// Writes `b[20..]` with its digits as `0` into `out` (whole 32-byte chunks, zeros past the
/// line) and returns the number of chunks and the hash of the line (its length, its raw
/// bytes 20..36 and the normalised chunks). `b` is at least [`MIN_LINE`] and below
/// [`MAX_LINE`] bytes long.
#[inline(always)]
fn normalize(b: &[u8], out: &mut [u8; NORM], avx2: bool) -> (usize, u64) {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let (chunks, a0, a1) = normalize_body(b.get(20..).unwrap_or_default(), out, avx2);
    let (r0, r1) = raw_head(b);
    let h = (a0 ^ r0 ^ (b.len() as u64).rotate_left(40)).wrapping_mul(K)
        ^ (a1 ^ r1).wrapping_mul(K >> 1);
    (chunks, h ^ (h >> 31))
}

/// Whether the first `STEP * chunks` bytes of `a` and `b` are equal (`false` when either is
/// shorter).
#[inline(always)]
fn same_chunks(a: &[u8], b: &[u8], chunks: usize, avx2: bool) -> bool {
    let len = STEP * chunks;
    if a.len() < len || b.len() < len {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: the CPU supports AVX2 (`avx2` is `has_avx2()`), and both slices hold `len`
        // bytes (checked above).
        return unsafe { same_chunks_avx2(a, b, chunks) };
    }
    a[..len] == b[..len]
}

/// [`same_chunks`] with AVX2.
///
/// # Safety
/// The CPU must support AVX2, and `a` and `b` must hold at least `STEP * chunks` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn same_chunks_avx2(a: &[u8], b: &[u8], chunks: usize) -> bool {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
        _mm256_set1_epi8,
    };
    debug_assert!(a.len() >= STEP * chunks && b.len() >= STEP * chunks);
    let (pa, pb) = (a.as_ptr() as *const __m256i, b.as_ptr() as *const __m256i);
    let mut eq = _mm256_set1_epi8(-1);
    for k in 0..chunks {
        // SAFETY: chunk `k < chunks` lies in both slices (the caller's contract).
        let (x, y) = unsafe { (_mm256_loadu_si256(pa.add(k)), _mm256_loadu_si256(pb.add(k))) };
        eq = _mm256_and_si256(eq, _mm256_cmpeq_epi8(x, y));
    }
    _mm256_movemask_epi8(eq) == -1
}

/// Whether `s` holds an ASCII digit: eight bytes a step.
fn has_digit(s: &[u8]) -> bool {
    let digits = |w: &[u8; 8]| crate::num::digit_bytes(u64::from_le_bytes(*w)) != 0;
    let Some(last) = s.last_chunk::<8>() else {
        return s.iter().any(u8::is_ascii_digit);
    };
    // the words before the last eight bytes, then those (over the end of the words before)
    let mut rest = s;
    while rest.len() > 8 {
        if let Some((w, tail)) = rest.split_first_chunk::<8>() {
            if digits(w) {
                return true;
            }
            rest = tail;
        }
    }
    digits(last)
}

/// The set of hash `h`.
#[inline(always)]
fn set_of(h: u64) -> usize {
    (h as usize) & (SETS - 1)
}

impl Layout {
    /// A layout of a line of `n` bytes whose message starts at `msg`, with its rank tags and
    /// normalised text, and no fields yet.
    fn blank(n: usize, msg: usize, ranks: RankTags, norm: [u8; NORM]) -> Layout {
        Layout {
            len: n as u16, // ok: below MAX_LINE
            msg: msg as u8,
            kind: BatchKind::Decode,
            ranks,
            env: [0; MAX_ENV],
            env_head: (0, 0),
            env_mask: (0, 0),
            norm,
            fields: 0,
            spans: [Span::default(); MAX_FIELDS],
            slot: [0; N_KNOWN],
            known: 0,
            check: 0,
            zero_dot: [(0, 0); MAX_ZERO_DOT],
            zero_dots: 0,
            plan: UsualPlan::NONE,
            access: None,
        }
    }

    /// The layout with its envelope part taken from `bytes` (the line): the raw bytes 20..msg,
    /// and those of them in 20..36 as two masked words.
    fn with_env(mut self, bytes: &[u8]) -> Layout {
        let msg = usize::from(self.msg);
        if let (Some(d), Some(e)) = (self.env.get_mut(..msg - 20), bytes.get(20..msg)) {
            d.copy_from_slice(e);
        }
        let mask = |lo: usize| {
            let k = (msg - 20).saturating_sub(lo).min(8);
            if k == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * k)) - 1
            }
        };
        let head = raw_head(bytes);
        self.env_mask = (mask(0), mask(8));
        self.env_head = (head.0 & self.env_mask.0, head.1 & self.env_mask.1);
        self
    }
}

/// Writes the record of a line of layout `l` (its message `text`, its screening bits
/// `check`) into `out`.
#[inline(always)]
fn write_batch<'a>(l: &Layout, text: &'a str, check: u64, out: &mut Event<'a>) {
    *out = Event::Batch(BatchLine {
        kind: l.kind,
        iter: None,
        form: BatchForm::Standard,
        text,
        spans: l.spans,
        slot: l.slot,
        known: l.known,
        len: l.fields,
        strict: true,
        overflow: 0,
        broken: 0,
        check,
        plan: l.plan,
    });
}

/// [`write_batch`] with AVX2: the ~300-byte record copied 32 bytes a move, inline (without
/// it the 192 bytes of spans went to a `memcpy` call, ~30 instructions, and the rest
/// 8 bytes a move).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn write_batch_avx2<'a>(l: &Layout, text: &'a str, check: u64, out: &mut Event<'a>) {
    write_batch(l, text, check, out);
}

impl Layouts {
    /// Whether layouts are learnt and used (off from the start for the tests that compare
    /// with the splitter, or once they were seldom used).
    #[cfg(test)]
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// No layouts yet; `enabled: false` never learns or recognises one (for the tests that
    /// compare with the splitter).
    pub(crate) fn new(enabled: bool) -> Self {
        Layouts {
            enabled,
            seen: 0,
            table: Vec::new(),
            norm: [0; NORM],
            last: (0, 0, 0, 0),
            avx2: has_avx2(),
            heads: 0,
            hits: 0,
            kept: 0,
        }
    }

    /// If `line` (a whole line, envelope included, without ANSI escapes) has a learnt layout:
    /// writes its event (a batch line's or an access line's) into `out` and returns the message offset and the rank tags;
    /// the caller reads the stamp (`line[1..20]`) as the envelope does. `None` (and `out`
    /// untouched): the general path reads the line.
    #[inline]
    pub(crate) fn read<'a>(
        &mut self,
        line: &'a str,
        out: &mut Event<'a>,
    ) -> Option<(usize, RankTags)> {
        let b = line.as_bytes();
        let n = b.len();
        // `last` names this line only once it is normalised below
        self.last.1 = 0;
        if !(MIN_LINE..MAX_LINE).contains(&n)
            || b[0] != b'['
            || self.heads & head_bit(raw_head(b).0) == 0
        {
            return None;
        }
        let (chunks, h) = normalize(b, &mut self.norm, self.avx2);
        self.last = (b.as_ptr() as usize, n, chunks, h);
        let set = self.table.get_mut(set_of(h))?;
        let (norm, avx2) = (&self.norm, self.avx2);
        let head = raw_head(b);
        let way = set.iter().position(|l| {
            l.as_ref().is_some_and(|l| {
                usize::from(l.len) == n
                    && same_chunks(&l.norm, norm, chunks, avx2)
                    && if l.msg <= 36 {
                        (head.0 ^ l.env_head.0) & l.env_mask.0 == 0
                            && (head.1 ^ l.env_head.1) & l.env_mask.1 == 0
                    } else {
                        b.get(20..usize::from(l.msg)) == l.env.get(..usize::from(l.msg) - 20)
                    }
            })
        })?;
        if way > 0 {
            set.swap(0, way);
        }
        let l = set[0].as_deref()?;
        let msg = usize::from(l.msg);
        if let Some(a) = l.access {
            // an access line: its slices where the layout's were, its status from its digits
            // (a status out of range is no access line: the general path reads it)
            let text = line.get(msg..)?;
            let at = |(x, y): (u8, u8)| text.get(usize::from(x)..usize::from(y));
            let status = crate::access::access_status(at(a.digits)?.as_bytes())?;
            *out = Event::HttpAccess(crate::HttpAccess {
                method: at(a.method)?,
                path: at(a.path)?,
                status,
            });
            self.hits += 1;
            return Some((msg, l.ranks));
        }
        let mut check = l.check;
        for &(at, id) in l.zero_dot.iter().take(usize::from(l.zero_dots)) {
            check |= u64::from(b.get(usize::from(at)) != Some(&b'0')) << (id % 64);
        }
        let text = line.get(msg..)?;
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: the CPU supports AVX2 (`avx2` is `has_avx2()`).
            unsafe { write_batch_avx2(l, text, check, out) };
            self.hits += 1;
            return Some((msg, l.ranks));
        }
        write_batch(l, text, check, out);
        self.hits += 1;
        Some((msg, l.ranks))
    }

    /// Keeps the layout of `line`, which the general path read with the fixed-offset envelope
    /// (rank tags `ranks`) into the batch record `b` whose text is the line from `msg` on.
    /// Lines a layout cannot reproduce are not kept: a message that does not start right
    /// after the envelope's first `]` and a space, a batch line the strict splitter did not
    /// split or that holds no digit-led value, one with a `[N]` iteration, cut or surplus
    /// fields, a digit outside the values, too many fraction fields.
    pub(crate) fn learn(&mut self, line: &str, msg: usize, ranks: RankTags, b: &BatchLine<'_>) {
        if !self.ready() {
            return;
        }
        let bytes = line.as_bytes();
        let n = bytes.len();
        let fields = usize::from(b.len);
        if !(MIN_LINE..MAX_LINE).contains(&n)
            || bytes[0] != b'['
            || !b.strict
            || b.form != BatchForm::Standard
            || b.iter.is_some()
            || b.broken != 0
            || b.overflow != 0
            || fields == 0
            || fields > MAX_FIELDS
            || msg < 22
            || msg - 20 > MAX_ENV
            || msg >= n
            || !std::ptr::eq(b.text.as_ptr(), line[msg..].as_ptr())
            || bytes.get(msg - 2..msg) != Some(b"] ")
            || memchr::memchr(b']', &bytes[20..msg - 2]).is_some()
        {
            return;
        }
        // the values' word (zeros past the line), as the splitter loads it
        let word = |at: usize| -> u64 {
            let mut w = [0u8; 8];
            let end = (at + 8).min(n);
            if let (Some(d), Some(s)) = (w.get_mut(..end - at), bytes.get(at..end)) {
                d.copy_from_slice(s);
            }
            u64::from_le_bytes(w)
        };
        // the known key whose first field each field is (N_KNOWN: none), from the key slots
        let mut first_of = [N_KNOWN as u8; MAX_FIELDS];
        for (id, &at) in b.slot.iter().enumerate() {
            if let Some(f) = usize::from(at)
                .checked_sub(1)
                .and_then(|i| first_of.get_mut(i))
            {
                *f = id as u8; // ok: id < N_KNOWN <= 64
            }
        }
        let mut check = 0u64;
        let mut zero_dot = [(0u8, 0u8); MAX_ZERO_DOT];
        let mut zero_dots = 0usize;
        let mut data = false;
        let mut from = msg;
        for (i, sp) in b.spans.iter().take(fields).enumerate() {
            let (k0, v0, v1) = (
                msg + usize::from(sp.k0),
                msg + usize::from(sp.v0),
                msg + usize::from(sp.v1),
            );
            // the strict form: `key: value`, the key right before `: `; no digit outside
            // the values
            if !(from <= k0 && k0 + 2 <= v0 && v0 < v1 && v1 <= n) || has_digit(&bytes[from..v0]) {
                return;
            }
            data |= bytes[v0].is_ascii_digit();
            let id = usize::from(first_of[i]);
            if id < N_KNOWN {
                let safe = FAST_SAFE.get(id).copied().unwrap_or(UNCHECKED);
                let w = word(v0);
                // the bit with the first byte a `0` and with it another digit (when a digit)
                let led = |c: u8| {
                    if (w as u8).is_ascii_digit() {
                        (w & !0xff) | u64::from(c)
                    } else {
                        w
                    }
                };
                let other = value_look(led(b'1'), v1 - v0, id);
                // only a value led by a digit, of a screened class, can differ by its digit
                let zero = if (w as u8).is_ascii_digit() && matches!(safe, SAFE_FRACTION) {
                    value_look(led(b'0'), v1 - v0, id)
                } else {
                    other
                };
                // the learnt line's own bit, as the splitter set it, must be the rule's
                let own = if bytes[v0] == b'0' { zero } else { other };
                if own != (b.check >> id & 1 != 0) {
                    return;
                }
                if zero == other {
                    check |= u64::from(zero) << id;
                } else if zero || !other || zero_dots == MAX_ZERO_DOT {
                    // only `0` clearing a bit that any other digit sets is expected (a
                    // fraction's `0.`); anything else is not kept
                    return;
                } else {
                    zero_dot[zero_dots] = (v0 as u8, id as u8); // ok: v0 < MAX_LINE, id < 64
                    zero_dots += 1;
                }
            }
            from = v1;
        }
        if !data || has_digit(&bytes[from..]) {
            return;
        }
        let h = self.hash_of(bytes);
        let layout = Layout {
            kind: b.kind,
            fields: b.len,
            spans: b.spans,
            slot: b.slot,
            known: b.known,
            check,
            zero_dot,
            zero_dots: zero_dots as u8, // ok: at most MAX_ZERO_DOT
            plan: UsualPlan::of(b),
            ..Layout::blank(n, msg, ranks, self.norm)
        };
        self.keep(layout.with_env(bytes), h, raw_head(bytes).0);
    }

    /// Keeps the layout of `line`, an access line (`HttpAccess` `a`, message from `msg` on)
    /// that the general path read after the fixed-offset envelope of a stamp without rank tags
    /// (`[stamp] INFO:     peer - "METHOD path HTTP/1.1" 200 OK`), and in which no `atc` was
    /// seen (so no batch marker is looked for after it). Every decision of the access scan
    /// reads the class of a byte (digit, space, quote, upper case), which the normalised text
    /// keeps, except the status's value: read again from each line's digits.
    pub(crate) fn learn_access(
        &mut self,
        line: &str,
        msg: usize,
        ranks: RankTags,
        a: &crate::HttpAccess<'_>,
    ) {
        if !self.ready() {
            return;
        }
        let bytes = line.as_bytes();
        let n = bytes.len();
        if !(MIN_LINE..MAX_LINE).contains(&n)
            || bytes[0] != b'['
            || bytes.get(20) != Some(&b']')
            || msg < 22
            || msg - 20 > MAX_ENV
            || msg >= n
            // the message right after the level: no `[gpu=N]` tag read in between (its digit
            // is a rank), and a peer that starts with a digit (the dispatch's access arm)
            || ranks != RankTags::default()
            || memchr::memchr(b'[', &bytes[20..msg]).is_some()
            || !bytes[msg].is_ascii_digit()
        {
            return;
        }
        let text = &line[msg..];
        let base = text.as_ptr() as usize;
        let span = |s: &str| -> Option<(u8, u8)> {
            let x = (s.as_ptr() as usize).checked_sub(base)?;
            let y = x + s.len();
            // ok: below MAX_LINE
            (y <= text.len()).then_some((x as u8, y as u8))
        };
        let (Some(method), Some(path)) = (span(a.method), span(a.path)) else {
            return;
        };
        // the status digits: after the path, the version's closing quote and blanks
        let t = text.as_bytes();
        let Some(q) = memchr::memchr(b'"', &t[usize::from(path.1)..]) else {
            return;
        };
        let mut d0 = usize::from(path.1) + q + 1;
        while t.get(d0).is_some_and(|&c| c == b' ' || c == b'\t') {
            d0 += 1;
        }
        let mut d1 = d0;
        while t.get(d1).is_some_and(u8::is_ascii_digit) {
            d1 += 1;
        }
        if crate::access::access_status(&t[d0..d1]) != Some(a.status) {
            return;
        }
        let h = self.hash_of(bytes);
        let layout = Layout {
            access: Some(AccessSpans {
                method,
                path,
                digits: (d0 as u8, d1 as u8), // ok: below MAX_LINE
            }),
            ..Layout::blank(n, msg, RankTags::default(), self.norm)
        };
        self.keep(layout.with_env(bytes), h, raw_head(bytes).0);
    }

    /// Whether a line may be learnt now: layouts on, and [`LEARN_AFTER`] lines offered
    /// before (counted here).
    fn ready(&mut self) -> bool {
        if !self.enabled {
            return false;
        }
        if self.seen < LEARN_AFTER {
            self.seen += 1;
            return false;
        }
        true
    }

    /// The hash of `bytes` (a line being learnt): from the normalised line its miss left, else
    /// normalised now (into `norm`).
    fn hash_of(&mut self, bytes: &[u8]) -> u64 {
        match self.last {
            (at, len, _, h) if at == bytes.as_ptr() as usize && len == bytes.len() => h,
            _ => normalize(bytes, &mut self.norm, self.avx2).1,
        }
    }

    /// Puts `layout` (of hash `h`, raw bytes 20..28 `head`) first in its set, judging the
    /// layouts' use first.
    fn keep(&mut self, layout: Layout, h: u64, head: u64) {
        if self.table.is_empty() {
            self.table = (0..SETS).map(|_| [None, None]).collect();
        }
        self.kept += 1;
        if self.kept >= JUDGE_AFTER && self.hits < HITS_PER_LAYOUT * self.kept {
            // seldom used: off for this reader (the general path reads every line)
            self.enabled = false;
            self.table = Vec::new();
            self.heads = 0;
            return;
        }
        self.heads |= head_bit(head);
        if let Some(set) = self.table.get_mut(set_of(h)) {
            // most recently used first; the other way drops out
            set[1] = set[0].take();
            set[0] = Some(Box::new(layout));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::{LineCache, parse_line_cached};

    /// Real lines of the seed-7 sample's form (`tests/data` holds their logs).
    const DECODE: &str = "[2026-01-15 08:00:03 TP0] Decode batch, #running-req: 6, #token: 880, token usage: 0.00, accept len: 2.89, cuda graph: True, gen throughput (token/s): 831.69, #queue-req: 146, ";
    const DECODE_2: &str = "[2026-01-15 08:00:04 TP0] Decode batch, #running-req: 7, #token: 123, token usage: 0.41, accept len: 3.12, cuda graph: False, gen throughput (token/s): 907.13, #queue-req: 139, ";
    const DECODE_3: &str = "[2026-01-15 08:00:05 TP0] Decode batch, #running-req: 5, #token: 999, token usage: 1.00, accept len: 1.00, cuda graph: False, gen throughput (token/s): 512.50, #queue-req: 101, ";

    /// The records of `lines` read in order with the layouts and without, and the layouts'
    /// hits.
    fn both(lines: &[&str]) -> (Vec<String>, Vec<String>, u64) {
        let mut with = LineCache::new(true);
        let mut without = LineCache::without_layouts();
        let mut a = Vec::new();
        let mut b = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            assert!(crate::grammar_check::lines_agree(
                &lines
                    .iter()
                    .take(i + 1)
                    .map(|l| l.as_bytes())
                    .collect::<Vec<_>>()
            ));
            let (x, y) = (
                parse_line_cached(l.as_bytes(), 1, &mut with),
                parse_line_cached(l.as_bytes(), 1, &mut without),
            );
            a.push(format!("{x:?}"));
            b.push(format!("{y:?}"));
        }
        (a, b, with.layout_hits())
    }

    #[test]
    fn a_line_of_a_known_layout_gets_the_splitters_record() {
        // the first batch line is only counted; DECODE's layout is kept at the second line,
        // but DECODE_2 is another one (`False` for `True`), kept at the third; it reads the
        // fourth and the fifth (other digits, the same lengths; `token usage: 1.00`, whose
        // screening bit is set where `0.41` left it clear)
        let lines = [DECODE, DECODE, DECODE_2, DECODE_2, DECODE_3];
        let (a, b, hits) = both(&lines);
        assert_eq!(a, b);
        assert_eq!(hits, 2);
        let mut c = LineCache::new(true);
        for l in [DECODE_2, DECODE_2] {
            parse_line_cached(l.as_bytes(), 1, &mut c);
        }
        let r = parse_line_cached(DECODE_3.as_bytes(), 1, &mut c);
        assert_eq!(c.layout_hits(), 1);
        let crate::Event::Batch(bl) = &r.event else {
            panic!("{r:?}")
        };
        assert_eq!(bl.token_usage(), Some(1.0));
        assert_eq!(bl.num_token(), Some(999));
        assert_eq!(bl.gen_throughput(), Some(512.5));
        assert_eq!(
            r.timestamp.map(|t| t.seconds() as u64 % 86_400),
            Some(8 * 3600 + 5)
        );
        // the fraction `1.00` is looked at (a fraction is sound on sight only as `0.…`)
        assert_eq!(bl.rejected_fields().count(), 0);
        assert!(!bl.sound(super::super::kid("token usage")));
    }

    #[test]
    fn lines_with_a_digit_outside_their_values_or_an_iteration_have_no_layout() {
        let keyed =
            "[2026-01-15 08:00:03 TP0] Decode batch. #running-req: 6, p99 len: 880, #queue-req: 1";
        let iter = "[2026-01-15 08:00:03 TP0] Decode batch [12]. #running-req: 6, #token: 880, #queue-req: 1";
        for l in [keyed, iter] {
            let (a, b, hits) = both(&[l, l, l, l]);
            assert_eq!(a, b);
            assert_eq!(hits, 0, "{l}");
        }
        // another rank's line of the same text is another layout (raw rank digits)
        let tp1 = DECODE.replace("TP0]", "TP1]");
        let (a, b, hits) = both(&[DECODE, DECODE, &tp1, DECODE]);
        assert_eq!(a, b);
        assert_eq!(hits, 1);
        assert!(a[2].contains("tp: Some(1)"), "{}", a[2]);
    }

    #[test]
    fn every_test_file_reads_alike_with_and_without_layouts() {
        let mut hits = 0;
        let mut batch = 0;
        for f in crate::test_data::files() {
            let data = std::fs::read(&f).unwrap();
            let lines: Vec<&[u8]> = data.split(|&c| c == b'\n').collect();
            assert!(crate::grammar_check::lines_agree(&lines), "{}", f.display());
            let mut c = LineCache::new(true);
            for (i, l) in lines.iter().enumerate() {
                let r = parse_line_cached(l, i as u64 + 1, &mut c);
                batch += u64::from(matches!(r.event, crate::Event::Batch(_)));
            }
            hits += c.layout_hits();
        }
        // the layouts are used on the real logs, not only on the sample
        assert!(hits * 4 > batch, "{hits} of {batch} batch lines");
    }

    #[test]
    fn a_reader_whose_lines_seldom_repeat_a_layout_stops_learning() {
        // every line its own layout (an unknown key of its own letters): kept, never used
        let lines: Vec<String> = (0..1200u32)
            .map(|i| {
                let key: String = [i % 26, i / 26 % 26, i / 676 % 26]
                    .iter()
                    .map(|&c| char::from(b'a' + c as u8))
                    .collect();
                format!(
                    "[2026-01-15 08:00:03 TP0] Decode batch. #running-req: 6, #{key}: 1, #queue-req: 2"
                )
            })
            .collect();
        let mut c = LineCache::new(true);
        for l in &lines {
            parse_line_cached(l.as_bytes(), 1, &mut c);
        }
        assert!(!c.layouts_enabled());
        // and the records are the splitter's, with and without the layouts
        let bytes: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        assert!(crate::grammar_check::lines_agree(&bytes));
        // a log whose layouts repeat keeps them
        let mut c = LineCache::new(true);
        for _ in 0..3000 {
            parse_line_cached(DECODE.as_bytes(), 1, &mut c);
        }
        assert!(c.layouts_enabled());
    }

    #[test]
    fn an_access_line_of_a_known_layout_gets_the_access_scans_record() {
        let a = r#"[2026-01-15 08:00:02] INFO:     192.0.2.162:50559 - "POST /generate HTTP/1.1" 200 OK"#;
        // other digits, the same lengths: the layout's slices, this line's status
        let b = r#"[2026-01-15 08:00:07] INFO:     192.0.2.187:44707 - "POST /generate HTTP/1.1" 503 OK"#;
        // a status out of range (no access line: the general path reads it) and a leading zero
        let c = r#"[2026-01-15 08:00:07] INFO:     192.0.2.187:44707 - "POST /generate HTTP/1.1" 700 OK"#;
        let d = r#"[2026-01-15 08:00:07] INFO:     192.0.2.187:44707 - "POST /generate HTTP/1.1" 099 OK"#;
        // a path with `atc` in it: no layout (a batch marker would be looked for)
        let e = r#"[2026-01-15 08:00:07] INFO:     192.0.2.187:44707 - "POST /v1/batches HTTP/1.1" 200 OK"#;
        // the first batch line is counted only: one decode line first
        let (x, y, hits) = both(&[DECODE, a, a, b, c, d]);
        assert_eq!(x, y);
        assert_eq!(hits, 2, "{x:?}");
        assert!(x[3].contains("status: 503"), "{}", x[3]);
        assert!(!x[4].contains("HttpAccess"), "{}", x[4]);
        let (x, y, hits) = both(&[DECODE, e, e, e]);
        assert_eq!(x, y);
        assert_eq!(hits, 0);
        // a `[gpu=N]` tag between the level and the peer is a rank (fuzz: its digit turned
        // must not be read as the kept line's): no layout
        let g0 = r#"[2026-02-21 13:06:55] INFO:    [gpu=0] 0 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request"#;
        let g7 = r#"[2026-02-21 13:06:55] INFO:    [gpu=7] 0 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request"#;
        let (x, y, hits) = both(&[g0, g0, g0, g7]);
        assert_eq!(x, y);
        assert_eq!(hits, 0);
        assert!(x[3].contains("Some(7)"), "{}", x[3]);
        // a log of access lines alone: the first counted, the second kept, the third read
        let (x, y, hits) = both(&[a, a, b]);
        assert_eq!(x, y);
        assert_eq!(hits, 1);
    }

    #[test]
    fn the_word_digit_test_is_the_bytewise_one() {
        // every byte value at every position of a word and of a tail
        for len in [7, 8, 9, 16, 17] {
            for at in 0..len {
                for c in 0..=255u8 {
                    let mut s = vec![b'x'; len];
                    s[at] = c;
                    assert_eq!(has_digit(&s), c.is_ascii_digit(), "{len} {at} {c}");
                }
            }
        }
    }

    #[test]
    fn the_vector_normalisation_is_the_bytewise_one() {
        let mut lines: Vec<Vec<u8>> = [DECODE, DECODE_2, DECODE_3]
            .iter()
            .map(|l| l.as_bytes().to_vec())
            .collect();
        // every length from the shortest to the longest a layout takes, and every byte value
        lines.extend((MIN_LINE..MAX_LINE).map(|n| (0..n).map(|i| (i * 37 % 256) as u8).collect()));
        for l in &lines {
            let (mut a, mut b) = ([0u8; NORM], [0u8; NORM]);
            let body = &l[20..l.len().min(MAX_LINE - 1)];
            assert_eq!(
                normalize_body(body, &mut a, has_avx2()),
                normalize_body_base(body, &mut b)
            );
            assert_eq!(a, b);
        }
    }
}
