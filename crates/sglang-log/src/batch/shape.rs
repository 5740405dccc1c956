//! Line shapes: the bytes of a batch line with its values cut out, learnt from one line and
//! matched against the next ones.
//!
//! A scheduler prints line after line of the same form: `[stamp TP0] Decode batch. #running-req:
//! 6, #token: 880, token usage: 0.00, cuda graph: True, gen throughput (token/s): 831.69,
//! #queue-req: 146`. Only the stamp and the values change. Once the general path has read such
//! a line (the fixed-offset envelope, then [`super::split_fast`]), its *shape* is kept: the
//! literal text between the values (`] Decode batch. #running-req: `, `, #token: `, …, the
//! tail), each field's key, and what the record holds apart from the values (rank tags,
//! message offset, kind, key slots). A later line is read by comparing its literal text word by
//! word and cutting each value with the splitter's own [`super::short_value`]: no envelope
//! search, no key prediction, no slot bookkeeping. That is where a batch line's ~1,300
//! instructions went (`docs/parse-speed.md`).
//!
//! **The same record.** A line a shape takes gets exactly the record the general path gives
//! it: every byte the envelope, the dispatch and the batch head look at is literal text of the
//! shape (they stop before the first value), every key is literal text, and each value is cut
//! and screened by the same function the splitter uses, which sees the same bytes (the line
//! copied into a zero-padded buffer, as the splitter copies it). A value the short form does
//! not take (`1e5`, eight digits or more, a flag without its `,`) makes the line miss, and the
//! general path reads it. `grammar_check::lines_agree` compares both on every line the tests
//! and the `parse_line` fuzz target give it; the `dump` example compares whole logs.

use super::{
    BatchForm, BatchKind, BatchLine, FAST_SAFE, MAX_FIELDS, N_KNOWN, Span, UNCHECKED, key_id,
    short_value,
};
use crate::{Event, RankTags};

/// Lines this long (bytes) or longer are not shaped: offsets are single bytes, and the padded
/// copy has a fixed size.
const SHAPE_LINE: usize = 256;
/// Shortest line shaped (bytes): the 32 bytes after the stamp pick the bucket.
const MIN_LINE: usize = 52;
/// Size of the padded copy: the line, then at least 64 zero bytes.
const PAD: usize = SHAPE_LINE + 64;
/// Size of [`Shape::lit`]: the literal text (shorter than a line) and 16 bytes more.
const LIT: usize = SHAPE_LINE + 16;
/// Buckets of shapes, picked by the 32 bytes after the stamp (rank tags, batch head, first
/// key): a DP/TP log interleaves a few ranks, two kinds, two separators.
const BUCKETS: usize = 64;
/// Shapes a bucket holds, most recently matched first (optional fields such as `accept len`
/// and a trailing `, ` give one shape each).
const WAYS: usize = 4;
/// Shapes kept at most (indices are single bytes, 0 for an empty way).
const MAX_SHAPES: usize = 255;
/// Batch lines offered to [`Shapes::learn`] before it keeps one: a one-line parse
/// ([`crate::parse_line`]) never pays for a shape.
const LEARN_AFTER: u32 = 1;

/// The shapes of one bucket.
#[derive(Clone, Copy)]
struct Bucket {
    /// The shapes' indices + 1 (0: empty way), most recently matched first.
    ways: [u8; WAYS],
    /// `common[j][k]`: [`Shape::common`] of the shapes of ways `j` and `k`.
    common: [[u8; WAYS]; WAYS],
}

impl Bucket {
    const EMPTY: Bucket = Bucket {
        ways: [0; WAYS],
        common: [[0; WAYS]; WAYS],
    };

    /// Moves way `j` first, the ways before it one down.
    fn promote(&mut self, j: usize) {
        let order: [usize; WAYS] = std::array::from_fn(|x| match x {
            0 => j,
            x if x <= j => x - 1,
            x => x,
        });
        let old = *self;
        for x in 0..WAYS {
            self.ways[x] = old.ways[order[x]];
            for y in 0..WAYS {
                self.common[x][y] = old.common[order[x]][order[y]];
            }
        }
    }
}

/// One learnt shape.
#[derive(Clone)]
struct Shape {
    /// The literal segments, one after the other, then zeros: segment `i` (before value `i`;
    /// the last one is the tail after the last value) is `lit[end[i - 1]..end[i]]`, segment
    /// 0 starting at 0 and covering the line from byte 20 (after the 19-byte stamp and `[`).
    lit: [u8; LIT],
    /// End of each segment in `lit` (`n + 1` of them).
    end: [u8; MAX_FIELDS + 1],
    /// Each segment's [`tail_mask`].
    mask: [u128; MAX_FIELDS + 1],
    /// Each field's key: its index in [`super::KNOWN_KEYS`], or [`N_KNOWN`] for an unknown key.
    id: [u8; MAX_FIELDS],
    /// Each field's screening class ([`FAST_SAFE`]).
    safe: [u8; MAX_FIELDS],
    /// Each field's value start minus its key start (bytes).
    key_back: [u8; MAX_FIELDS],
    /// Bit `i`: field `i` is the first of its known key (it holds the key's slot and its
    /// `check` bit).
    first: u32,
    /// Fields.
    n: u8,
    /// Offset of the message (the batch head) in the line.
    msg: u8,
    kind: BatchKind,
    ranks: RankTags,
    slot: [u8; N_KNOWN],
    known: u8,
}

/// The shapes one reader has learnt (see the module doc), and the padded copy of the line
/// being matched.
#[derive(Clone)]
pub(crate) struct Shapes {
    enabled: bool,
    /// Batch lines offered to [`Shapes::learn`] (up to [`LEARN_AFTER`]).
    seen: u32,
    table: [Bucket; BUCKETS],
    shapes: Vec<Shape>,
    pad: [u8; PAD],
    spans: [Span; MAX_FIELDS],
}

impl std::fmt::Debug for Shapes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shapes")
            .field("enabled", &self.enabled)
            .field("shapes", &self.shapes.len())
            .finish()
    }
}

/// The 8 bytes at `p` of a padded array as a little-endian word; `p` is masked into the first
/// [`SHAPE_LINE`] bytes (every offset of a successful match is), so no bounds check remains.
#[inline(always)]
fn ld<const N: usize>(b: &[u8; N], p: usize) -> u64 {
    const { assert!(N >= SHAPE_LINE + 8) };
    let i = p & (SHAPE_LINE - 1);
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(w)
}

/// The bucket of a line whose bytes 20..52 are the words `w`.
#[inline(always)]
fn bucket(w: [u64; 4]) -> usize {
    let h = w[0] ^ w[1].rotate_left(17) ^ w[2].rotate_left(31) ^ w[3].rotate_left(47);
    (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % BUCKETS
}

/// Bytes 20..52 of `b` (at least [`MIN_LINE`] long) as four words.
#[inline(always)]
fn head_words(b: &[u8]) -> Option<[u64; 4]> {
    let w =
        |i: usize| -> Option<u64> { Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?)) };
    Some([w(20)?, w(28)?, w(36)?, w(44)?])
}

/// The 16 bytes at `p` of a padded array as a little-endian number (`p` masked as in [`ld`]).
#[inline(always)]
fn ld16<const N: usize>(b: &[u8; N], p: usize) -> u128 {
    const { assert!(N >= SHAPE_LINE + 16) };
    let i = p & (SHAPE_LINE - 1);
    let mut w = [0u8; 16];
    w.copy_from_slice(&b[i..i + 16]);
    u128::from_le_bytes(w)
}

/// Whether `len` bytes of the padded line at `p` equal those of `lit` at `a`: 16 bytes at a
/// time, the last 0 - 16 under `mask` ([`tail_mask`] of `len`).
#[inline(always)]
fn lit_eq(pad: &[u8; PAD], p: usize, lit: &[u8; LIT], a: usize, len: usize, mask: u128) -> bool {
    let mut k = 0;
    while k + 16 < len {
        if ld16(pad, p + k) != ld16(lit, a + k) {
            return false;
        }
        k += 16;
    }
    (ld16(pad, p + k) ^ ld16(lit, a + k)) & mask == 0
}

/// The mask of the bytes [`lit_eq`] compares in its last 16-byte step for a segment of `len`
/// bytes (0 for an empty segment).
fn tail_mask(len: usize) -> u128 {
    match len {
        0 => 0,
        _ => u128::MAX >> (8 * (16 - (len - 1) % 16 - 1)),
    }
}

/// Where [`Shape::read`] is in a line: before field `i`'s literal segment, at line offset
/// `p` and offset `a` of the shape's literal text, with the `check` bits and the digit flag
/// of the fields before.
#[derive(Clone, Copy)]
struct Cursor {
    i: usize,
    p: usize,
    a: usize,
    check: u64,
    data: bool,
}

/// Before the first field.
const START: Cursor = Cursor {
    i: 0,
    p: 20,
    a: 0,
    check: 0,
    data: false,
};

impl Shape {
    /// Reads the padded line of `n` bytes from `c` on: its spans (into `spans`, relative to
    /// the message) and `check` bits if it has this shape; else `Err` with `c` left before
    /// the field that did not match (its literal or its value; `i == n` for the tail).
    #[inline(always)]
    fn read(
        &self,
        pad: &[u8; PAD],
        n: usize,
        spans: &mut [Span; MAX_FIELDS],
        c: &mut Cursor,
    ) -> Result<u64, ()> {
        let fields = usize::from(self.n).min(MAX_FIELDS);
        let m = usize::from(self.msg);
        while c.i < fields {
            let i = c.i;
            let z = usize::from(self.end[i]);
            let len = z - c.a;
            if c.p + len > n || !lit_eq(pad, c.p, &self.lit, c.a, len, self.mask[i]) {
                return Err(());
            }
            let v0 = c.p + len;
            let w = ld(pad, v0);
            let (vl, look) = short_value(w, self.safe[i]).map_err(|_| ())?;
            c.data |= (w as u8).is_ascii_digit();
            let id = u32::from(self.id[i]);
            c.check |= u64::from(look & (self.first >> i & 1 != 0)) << (id % 64);
            // ok: the line is shorter than SHAPE_LINE, so every offset fits in u16
            spans[i] = Span {
                k0: (v0 - usize::from(self.key_back[i]) - m) as u16,
                v0: (v0 - m) as u16,
                v1: (v0 + vl - m) as u16,
            };
            c.p = v0 + vl;
            c.a = z;
            c.i += 1;
        }
        let z = usize::from(self.end[fields]);
        let len = z - c.a;
        let tail = c.p + len == n && lit_eq(pad, c.p, &self.lit, c.a, len, self.mask[fields]);
        if c.data && tail { Ok(c.check) } else { Err(()) }
    }

    /// Fields whose literal segment (and everything before) and key are the same in `self`
    /// and `o`: a line read up to such a field by one shape is read alike by the other.
    fn common(&self, o: &Shape) -> u8 {
        let mut i = 0;
        let max = usize::from(self.n.min(o.n));
        while i < max
            && self.end[i] == o.end[i]
            && self.id[i] == o.id[i]
            && self.key_back[i] == o.key_back[i]
            && self.lit[..usize::from(self.end[i])] == o.lit[..usize::from(self.end[i])]
        {
            i += 1;
        }
        // ok: at most MAX_FIELDS
        i as u8
    }
}

impl Shape {
    /// Whether `o` describes the same lines (the same literal text, keys and record parts).
    fn same_as(&self, o: &Shape) -> bool {
        let n = usize::from(self.n);
        let lit = usize::from(self.end[n]);
        self.n == o.n
            && self.msg == o.msg
            && self.kind == o.kind
            && self.ranks == o.ranks
            && self.end[..=n] == o.end[..=n]
            && self.lit[..lit] == o.lit[..lit]
            && self.id[..n] == o.id[..n]
    }
}

impl Shapes {
    /// No shapes yet; `enabled: false` never learns or matches one (for the tests that
    /// compare with the splitter).
    pub(crate) fn new(enabled: bool) -> Self {
        Shapes {
            enabled,
            seen: 0,
            table: [Bucket::EMPTY; BUCKETS],
            shapes: Vec::new(),
            pad: [0; PAD],
            spans: [Span::default(); MAX_FIELDS],
        }
    }

    /// If `line` (a whole line, envelope included, without ANSI escapes) has a learnt shape:
    /// writes its batch record into `out` and returns the message offset and the rank tags;
    /// the caller reads the stamp (`line[1..20]`). `None` (and `out` untouched): the general
    /// path reads the line.
    #[inline]
    pub(crate) fn read<'a>(
        &mut self,
        line: &'a str,
        out: &mut Event<'a>,
    ) -> Option<(usize, RankTags)> {
        let b = line.as_bytes();
        let n = b.len();
        if n >= SHAPE_LINE || n < MIN_LINE || self.shapes.is_empty() {
            return None;
        }
        let h = bucket(head_words(b)?);
        if self.table.get(h)?.ways[0] == 0 {
            return None;
        }
        // the line, then 64 zeros (reads reach at most 8 bytes past its end on a match)
        let pad = &mut self.pad;
        for (d, s) in pad.chunks_exact_mut(32).zip(b.chunks_exact(32)) {
            d.copy_from_slice(s);
        }
        pad.get_mut(n - 32..n)?.copy_from_slice(b.get(n - 32..)?);
        pad.get_mut(n..n + 64)?.fill(0);
        let bucket = *self.table.get(h)?;
        let mut c = START;
        // the way that failed last and at which field (a way that shares its fields up to
        // there resumes from its cursor; one that shares more fails alike and is skipped)
        let mut failed: Option<(usize, usize)> = None;
        for (j, &s) in bucket.ways.iter().enumerate() {
            let Some(shape) = usize::from(s)
                .checked_sub(1)
                .and_then(|x| self.shapes.get(x))
            else {
                break;
            };
            if let Some((fj, f)) = failed {
                let shared = usize::from(bucket.common[fj][j]);
                if shared > f {
                    continue;
                }
                if shared < f {
                    c = START;
                }
            }
            let Ok(check) = shape.read(&self.pad, n, &mut self.spans, &mut c) else {
                failed = Some((j, c.i));
                continue;
            };
            let fields = usize::from(shape.n).min(MAX_FIELDS);
            let text = line.get(usize::from(shape.msg)..)?;
            // built in place (the record is ~400 bytes)
            *out = Event::Batch(BatchLine::new(shape.kind, BatchForm::Standard, text));
            let Event::Batch(bl) = out else {
                return None; // ok: unreachable, assigned just above
            };
            bl.spans[..fields].copy_from_slice(&self.spans[..fields]);
            bl.slot = shape.slot;
            bl.known = shape.known;
            bl.len = shape.n;
            bl.strict = true;
            bl.check = check;
            let found = (usize::from(shape.msg), shape.ranks);
            if j > 0 {
                // most recently matched first
                self.table[h].promote(j);
            }
            return Some(found);
        }
        None
    }

    /// Keeps the shape of `line`, which the general path read with the fixed-offset envelope
    /// (rank tags `ranks`) into the batch record `b` whose text is the rest of the line from
    /// `msg` on. Lines a shape cannot reproduce are not kept: a message that does not start
    /// right after the envelope's first `]` and a space, a batch line the strict splitter did
    /// not split, one with a `[N]` iteration, cut or surplus fields.
    pub(crate) fn learn(&mut self, line: &str, msg: usize, ranks: RankTags, b: &BatchLine<'_>) {
        if !self.enabled {
            return;
        }
        if self.seen < LEARN_AFTER {
            self.seen += 1;
            return;
        }
        let bytes = line.as_bytes();
        let n = bytes.len();
        let fields = usize::from(b.len);
        if n >= SHAPE_LINE
            || n < MIN_LINE
            || !b.strict
            || b.form != BatchForm::Standard
            || b.iter.is_some()
            || b.broken != 0
            || b.overflow != 0
            || fields == 0
            || fields > MAX_FIELDS
            || msg < 22
            || msg >= n
            || !std::ptr::eq(b.text.as_ptr(), line[msg..].as_ptr())
            || bytes.get(msg - 2..msg) != Some(b"] ")
            || memchr::memchr(b']', &bytes[20..msg - 2]).is_some()
        {
            return;
        }
        let mut s = Shape {
            lit: [0; LIT],
            end: [0; MAX_FIELDS + 1],
            mask: [0; MAX_FIELDS + 1],
            id: [0; MAX_FIELDS],
            safe: [0; MAX_FIELDS],
            key_back: [0; MAX_FIELDS],
            first: 0,
            n: fields as u8, // ok: at most MAX_FIELDS
            msg: msg as u8,  // ok: below SHAPE_LINE
            kind: b.kind,
            ranks,
            slot: b.slot,
            known: b.known,
        };
        let mut lit_len = 0usize;
        let mut from = 20usize;
        let push = |s: &mut Shape, lit_len: &mut usize, seg: &[u8]| -> Option<()> {
            s.lit
                .get_mut(*lit_len..*lit_len + seg.len())?
                .copy_from_slice(seg);
            *lit_len += seg.len();
            Some(())
        };
        for (i, sp) in b.spans.iter().take(fields).enumerate() {
            let (k0, v0, v1) = (
                msg + usize::from(sp.k0),
                msg + usize::from(sp.v0),
                msg + usize::from(sp.v1),
            );
            // the strict form: `key: value`, the key right before `: `
            if !(from <= k0 && k0 + 2 <= v0 && v0 < v1 && v1 <= n) {
                return;
            }
            if push(&mut s, &mut lit_len, &bytes[from..v0]).is_none() {
                return;
            }
            s.end[i] = lit_len as u8; // ok: below SHAPE_LINE
            s.mask[i] = tail_mask(v0 - from);
            let id = key_id(&bytes[k0..v0 - 2]).unwrap_or(N_KNOWN);
            s.id[i] = id as u8; // ok: N_KNOWN <= 64
            s.safe[i] = FAST_SAFE.get(id).copied().unwrap_or(UNCHECKED);
            s.key_back[i] = (v0 - k0) as u8; // ok: below SHAPE_LINE
            if b.slot.get(id).is_some_and(|&at| usize::from(at) == i + 1) {
                s.first |= 1 << i;
            }
            from = v1;
        }
        if push(&mut s, &mut lit_len, &bytes[from..]).is_none() {
            return;
        }
        s.end[fields] = lit_len as u8;
        s.mask[fields] = tail_mask(n - from);
        let Some(h) = head_words(bytes).map(bucket) else {
            return;
        };
        let bucket = &mut self.table[h];
        // a shape the bucket holds already (the line missed it by a value the short form does
        // not take, `28879.56`): first again, not kept twice
        if let Some(j) = bucket.ways.iter().position(|&at| {
            at != 0
                && self
                    .shapes
                    .get(usize::from(at) - 1)
                    .is_some_and(|o| o.same_as(&s))
        }) {
            bucket.promote(j);
            return;
        }
        let index = if self.shapes.len() < MAX_SHAPES {
            self.shapes.push(s);
            self.shapes.len() as u8 // ok: at most MAX_SHAPES
        } else if bucket.ways[WAYS - 1] != 0 {
            // full: the bucket's least recently matched shape makes room
            let at = bucket.ways[WAYS - 1];
            self.shapes[usize::from(at) - 1] = s;
            at
        } else {
            return;
        };
        // first in its bucket; the last way drops out (when it was reused, it is this one)
        let old = *bucket;
        let new = &self.shapes[usize::from(index) - 1];
        for x in 1..WAYS {
            bucket.ways[x] = old.ways[x - 1];
            for y in 1..WAYS {
                bucket.common[x][y] = old.common[x - 1][y - 1];
            }
            let shared = usize::from(old.ways[x - 1])
                .checked_sub(1)
                .and_then(|o| self.shapes.get(o))
                .map_or(0, |o| new.common(o));
            bucket.common[0][x] = shared;
            bucket.common[x][0] = shared;
        }
        bucket.ways[0] = index;
        bucket.common[0][0] = new.n;
    }
}
