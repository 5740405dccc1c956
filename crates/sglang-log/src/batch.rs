//! The per-batch scheduler lines: `Decode batch`, `Prefill batch` (spec §2.1, §2.2) and their
//! v0.1 forms.

use crate::Event;
use crate::grammar::{PResult, byte, byte_if, lit, offset_of, pos_in, until};
use crate::num::{
    parse_bool, parse_f64, parse_f64_bytes, parse_percent_fraction, parse_u64, parse_u64_bytes,
};
use crate::values::{RejectedField, Rejection, ValueClass, class_of};

use nom::Parser;
use nom::branch::alt;
use nom::bytes::complete::tag;
use nom::character::complete::digit1;
use nom::combinator::{opt, peek, rest, value, verify};
use nom::sequence::{delimited, preceded, terminated};

mod layout;
mod readings;
pub(crate) use layout::Layouts;
use readings::UsualPlan;
pub use readings::{DecodeReadings, PrefillReadings};

/// A batch line's `fwd occupancy` reading ([`BatchLine::fwd_occupancy`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FwdOccupancy {
    /// GPU-busy share of the window's wall time (fraction 0–1.5; the printed percent / 100).
    Busy(f64),
    /// `nan%`: the device timer measured no window (SGLang starts the figure at NaN and
    /// prints it so until a window is measured; an idle scheduler).
    Idle,
}

/// Most `key: value` fields kept per batch line; further ones are counted in
/// [`BatchLine::overflow_fields`]. The longest SGLang line has about 30.
pub const MAX_FIELDS: usize = 32;

/// Which scheduler pass a batch line reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BatchKind {
    /// A prefill (extend) batch: `Prefill batch`, `Prefil batch` (v0.1.17), `new fill batch` (≤ v0.1.16).
    Prefill,
    /// A decode batch: `Decode batch`, or the head-less v0.1 stats line `#running-req: …`.
    Decode,
}

/// The textual form the batch line had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BatchForm {
    /// `Decode batch. …`, `Decode batch, …`, `Decode batch [N], …` and the same for prefill.
    Standard,
    /// `Prefill batch(mixed #running-req: N). …` (v0.2.14 – v0.3.5 with `--enable-mixed-chunk`);
    /// the head's running count is exposed as the field `#running-req`.
    Mixed,
    /// ≤ v0.1.16 `new fill batch. #seq: N. #cached_token: N. …` (fields separated by `. `).
    LegacyFill,
    /// ≤ v0.1.16 decode stats without a head: `#running-req: N, #token: N, …`.
    LegacyStats,
    /// A decode line whose start was cut off (a paste that begins mid-line): `req: 229,
    /// #token: 55875, token usage: 0.18, gen throughput (token/s): 505.16, …`. The first
    /// fragment's key is the tail of `#running-req` (the field SGLang prints before
    /// `#token`), and is read as that field; the stamp and ranks are lost with the head.
    CutStart,
}

/// Byte offsets of one `key: value` pair inside [`BatchLine::text`]: key start, value start,
/// value end. The key end is not stored: between it and the value there are only spaces, the
/// `:` and spaces again, so [`BatchLine::key_end`] recovers it (6 bytes per field instead of 8
/// keep the record under 400 bytes with the key slot table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Span {
    k0: u16,
    v0: u16,
    v1: u16,
}

/// Longest batch message kept: spans are 16-bit offsets (a real batch line is under 1 KiB).
pub const MAX_BATCH_LINE: usize = u16::MAX as usize;

/// One `Decode batch` / `Prefill batch` line. Fields are kept as borrowed `key: value` slices of
/// the input in an inline array (no allocation); typed accessors parse on demand and return
/// `None` when the field is absent or its value does not parse.
///
/// Keys are the literal SGLang keys (spec §2.1.2 / §2.2.2), e.g. `#running-req`,
/// `gen throughput (token/s)`. Values are trimmed; a trailing `", "` / `","` / `" "` is removed.
/// The hybrid form `#token: full=N, swa=M` keeps `full=N, swa=M` as the value of `#token`.
#[derive(Clone)]
pub struct BatchLine<'a> {
    /// Prefill or decode.
    pub kind: BatchKind,
    /// The forward-iteration counter of `Decode batch [N]` (v0.5.4, or `SGLANG_LOG_FORWARD_ITERS=1`).
    pub iter: Option<u64>,
    /// How the line was written.
    pub form: BatchForm,
    text: &'a str,
    spans: [Span; MAX_FIELDS],
    /// For each key of [`KNOWN_KEYS`] (by index): 1 + the index of its first field in `spans`,
    /// 0 when absent. Typed accessors are one table load instead of string compares.
    slot: [u8; N_KNOWN],
    /// How many slots of `slot` are set (fields whose key is known and the first of its key):
    /// equal to `len` when every field's key is known and none repeats.
    known: u8,
    len: u8,
    /// The fields were split by the strict-form splitter ([`split_fast`]), which takes values
    /// of [`VALUE_BYTE`]s only: no value holds `=`, so none has `name=` parts.
    strict: bool,
    overflow: u16,
    broken: u16,
    /// Bit `id` set: the first field of known key `id` must be looked at by
    /// [`BatchLine::rejected_fields`] (set by the splitters: every fraction, percentage, step
    /// length and MFU value, and the counts and rates that are not a short digit run; a clear
    /// bit means the value is sound or the key unchecked).
    check: u64,
    /// Where the usual line's readings lie, set by a layout ([`UsualPlan`]; `NONE` from the
    /// splitters).
    plan: UsualPlan,
}

/// Equal when the lines were read alike: kind, form, iteration, text and fields (the screening
/// hints, [`BatchLine::rejected_fields`]' and the strict-form flag of the `name=` parts, differ
/// between the splitters and are no part of it; the rejected fields and the parts themselves
/// are equal whenever the fields are).
impl PartialEq for BatchLine<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.kind == o.kind
            && self.iter == o.iter
            && self.form == o.form
            && self.text == o.text
            && self.spans == o.spans
            && self.slot == o.slot
            && self.len == o.len
            && self.overflow == o.overflow
            && self.broken == o.broken
    }
}

impl BatchLine<'_> {
    /// Equal in every field, the splitter's screening bits and key slots included (where
    /// [`PartialEq`] compares what the line says): two fast paths must give the same record
    /// bit for bit.
    #[cfg(any(test, feature = "grammar-check"))]
    pub(crate) fn same_record(&self, o: &Self) -> bool {
        self == o
            && std::ptr::eq(self.text, o.text)
            && self.known == o.known
            && self.strict == o.strict
            && self.check == o.check
            && self.own_plan() == o.own_plan()
    }

    /// The plan the line carries, or the one a layout would give it (a plan is a layout's
    /// short-cut: a record with one must carry exactly the plan of its fields).
    #[cfg(any(test, feature = "grammar-check"))]
    fn own_plan(&self) -> UsualPlan {
        if self.plan == UsualPlan::NONE {
            UsualPlan::of(self)
        } else {
            self.plan
        }
    }
}

impl std::fmt::Debug for BatchLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchLine")
            .field("kind", &self.kind)
            .field("iter", &self.iter)
            .field("form", &self.form)
            .field("fields", &self.fields().collect::<Vec<_>>())
            .field("broken", &self.broken)
            .field("overflow", &self.overflow)
            .finish()
    }
}

/// Keys with a typed accessor or a documented meaning (spec §2.1.2, §2.2.2); everything else is
/// returned by [`BatchLine::unknown_fields`].
pub const KNOWN_KEYS: &[&str] = &[
    "#running-req",
    "#running_req",
    "#queue-req",
    "#remaining_req",
    "#token",
    "token usage",
    "#full token",
    "full token usage",
    "#swa token",
    "swa token usage",
    "mamba num",
    "mamba usage",
    "#gpu token",
    "gpu token usage",
    "#cpu token",
    "cpu token usage",
    "gen throughput (token/s)",
    "input throughput (token/s)",
    "#new-seq",
    "#seq",
    "#new-token",
    "#new_token",
    "#cached-token",
    "#cached_token",
    "cache hit rate",
    "tree_cache_hit_rate",
    "#pending-token",
    "accept len",
    "accept rate",
    "cap len",
    "block accept len",
    "cuda graph",
    "cpu graph",
    "npu graph",
    "musa graph",
    "pre-allocated usage",
    "#prealloc-req",
    "#transfer-req",
    "#retracted-req",
    "#inflight-req",
    "#bootstrap-req",
    "#unbootstrapped-req",
    "#transferring-req",
    "#optimistic-req",
    "waiting-image-req",
    "largest-len",
    "timestamp",
    "time",
    "est. decode TFLOPS/s (per GPU)",
    "est. prefill TFLOPS/s (per GPU)",
    "est. read BW (GB/s per GPU)",
    "est. write BW (GB/s per GPU)",
    "fwd occupancy",
];

const N_KNOWN: usize = KNOWN_KEYS.len();

/// Key fingerprint: length plus the first and last 8 bytes (little endian; keys shorter than 8
/// bytes are zero-padded into the first word). Exact for keys up to 16 bytes.
#[inline(always)]
const fn fingerprint(k: &[u8]) -> (u64, u64) {
    let n = k.len();
    if n >= 8 {
        let mut a = [0u8; 8];
        let mut c = [0u8; 8];
        let mut i = 0;
        while i < 8 {
            a[i] = k[i];
            c[i] = k[n - 8 + i];
            i += 1;
        }
        (u64::from_le_bytes(a), u64::from_le_bytes(c))
    } else {
        let mut a = [0u8; 8];
        let mut i = 0;
        while i < n {
            a[i] = k[i];
            i += 1;
        }
        (u64::from_le_bytes(a), 0)
    }
}

const KEY_HASH_BITS: u32 = 7;
/// Chosen so that the [`KNOWN_KEYS`] land in distinct buckets (checked at compile time).
const KEY_HASH_MUL: u64 = 0x111b_7a83_3273_0531;

#[inline(always)]
const fn key_hash(n: usize, a: u64, c: u64) -> usize {
    ((a ^ c.rotate_left(23) ^ n as u64).wrapping_mul(KEY_HASH_MUL) >> (64 - KEY_HASH_BITS)) as usize
}

const NO_KEY: u8 = u8::MAX;

/// Bucket → index into [`KNOWN_KEYS`] (or [`NO_KEY`]); a collision stops the build.
const KEY_TABLE: [u8; 1 << KEY_HASH_BITS] = {
    let mut t = [NO_KEY; 1 << KEY_HASH_BITS];
    let mut i = 0;
    while i < N_KNOWN {
        let k = KNOWN_KEYS[i].as_bytes();
        let (a, c) = fingerprint(k);
        let h = key_hash(k.len(), a, c);
        assert!(
            t[h] == NO_KEY,
            "KNOWN_KEYS collide in KEY_TABLE: pick another KEY_HASH_MUL"
        );
        t[h] = i as u8;
        i += 1;
    }
    t
};

/// Fingerprints of [`KNOWN_KEYS`], by index.
const KEY_FP: [(u64, u64); N_KNOWN] = {
    let mut t = [(0, 0); N_KNOWN];
    let mut i = 0;
    while i < N_KNOWN {
        t[i] = fingerprint(KNOWN_KEYS[i].as_bytes());
        i += 1;
    }
    t
};

/// [`fingerprint`] with word loads (the `const fn` form copies byte by byte).
#[inline(always)]
fn fingerprint_rt(k: &[u8]) -> (u64, u64) {
    let n = k.len();
    match (k.first_chunk::<8>(), k.last_chunk::<8>()) {
        (Some(a), Some(c)) => (u64::from_le_bytes(*a), u64::from_le_bytes(*c)),
        _ => {
            let mut a = [0u8; 8];
            a[..n].copy_from_slice(k);
            (u64::from_le_bytes(a), 0)
        }
    }
}

/// Index of `k` in [`KNOWN_KEYS`], if it is one.
#[inline]
fn key_id(k: &[u8]) -> Option<usize> {
    let (a, c) = fingerprint_rt(k);
    let id = usize::from(KEY_TABLE[key_hash(k.len(), a, c)]);
    let known = KNOWN_KEYS.get(id)?.as_bytes();
    let same = known.len() == k.len() && KEY_FP[id] == (a, c) && (k.len() <= 16 || known == k);
    same.then_some(id)
}

/// The [`ValueClass`] of each of [`KNOWN_KEYS`], by index.
const KEY_CLASS: [ValueClass; N_KNOWN] = {
    let mut t = [ValueClass::Unchecked; N_KNOWN];
    let mut i = 0;
    while i < N_KNOWN {
        t[i] = class_of(KNOWN_KEYS[i]);
        i += 1;
    }
    t
};

/// Whether the integer `n` is a sound value of known key `id`.
#[inline(always)]
fn admits_u64(id: usize, n: u64) -> bool {
    KEY_CLASS.get(id).is_some_and(|c| c.admits_u64(n))
}

/// Whether `x` is a sound value of known key `id`.
#[inline(always)]
fn admits_f64(id: usize, x: f64) -> bool {
    KEY_CLASS.get(id).is_some_and(|c| c.admits_f64(x))
}

/// Compile-time index of a key in [`KNOWN_KEYS`] (a typo stops the build).
const fn kid(name: &str) -> usize {
    let n = name.as_bytes();
    let mut i = 0;
    while i < N_KNOWN {
        let k = KNOWN_KEYS[i].as_bytes();
        if k.len() == n.len() {
            let mut j = 0;
            while j < k.len() && k[j] == n[j] {
                j += 1;
            }
            if j == k.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not in KNOWN_KEYS")
}

/// `full=N, swa=M` → the value after `name=` up to the next `,`. Callers first check that the
/// value holds a `=` ([`BatchLine::part`]): the usual value is a plain number.
fn sub_value<'a>(v: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = v;
    loop {
        let i = rest.find(name)?;
        let before_ok = i == 0 || matches!(rest.as_bytes()[i - 1], b' ' | b',');
        let after = &rest[i + name.len()..];
        if before_ok && let Some(a) = after.strip_prefix('=') {
            let end = a.find(',').unwrap_or(a.len());
            return Some(a[..end].trim());
        }
        rest = after;
    }
}

impl<'a> BatchLine<'a> {
    fn new(kind: BatchKind, form: BatchForm, text: &'a str) -> Self {
        BatchLine {
            kind,
            iter: None,
            form,
            text,
            spans: [Span::default(); MAX_FIELDS],
            slot: [0; N_KNOWN],
            known: 0,
            len: 0,
            strict: false,
            overflow: 0,
            broken: 0,
            check: 0,
            plan: UsualPlan::NONE,
        }
    }

    #[inline]
    fn push(&mut self, k0: usize, k1: usize, v0: usize, v1: usize) {
        let n = usize::from(self.len);
        if n < MAX_FIELDS {
            // ok: the parsers reject messages longer than MAX_BATCH_LINE (u16::MAX) bytes
            self.spans[n] = Span {
                k0: k0 as u16,
                v0: v0 as u16,
                v1: v1 as u16,
            };
            self.len += 1;
            if let Some(id) = self.text.as_bytes().get(k0..k1).and_then(key_id)
                && self.slot[id] == 0
            {
                self.slot[id] = self.len;
                self.known += 1;
                self.check |= u64::from(FAST_SAFE[id] != UNCHECKED) << id;
            }
        } else {
            self.overflow = self.overflow.saturating_add(1);
        }
    }

    /// End of the key of `s`: back from the value start over spaces, the `:`, spaces.
    #[inline]
    fn key_end(&self, s: &Span) -> u16 {
        let b = self.text.as_bytes();
        let mut j = usize::from(s.v0);
        let k0 = usize::from(s.k0);
        while j > k0 && b.get(j - 1) == Some(&b' ') {
            j -= 1;
        }
        if j > k0 && b.get(j - 1) == Some(&b':') {
            j -= 1;
        }
        while j > k0 && b.get(j - 1) == Some(&b' ') {
            j -= 1;
        }
        j as u16 // ok: j <= v0, a u16
    }

    /// Value of the first field whose key is `KNOWN_KEYS[id]`.
    #[inline(always)]
    fn by_id(&self, id: usize) -> Option<&'a str> {
        let at = usize::from(*self.slot.get(id)?);
        let s = self.spans.get(at.checked_sub(1)?)?;
        Some(self.slice(s.v0, s.v1))
    }

    /// The `name=` part of the first field of known key `id` (`#token: full=N, swa=M`,
    /// `token usage: full=X, swa=Y`), if its value has parts.
    fn part(&self, id: usize, name: &str) -> Option<&'a str> {
        // the usual value is a plain number: no `=`, nothing to search (known without a look
        // on a strict-form line; else checked on the bytes, before the value is sliced as text
        // and searched with `str::find`)
        if self.strict || !self.bytes_by_id(id)?.contains(&b'=') {
            return None;
        }
        self.by_id(id).and_then(|v| sub_value(v, name))
    }

    /// [`BatchLine::by_id`] as bytes (no char-boundary checks: typed accessors parse ASCII).
    #[inline(always)]
    fn bytes_by_id(&self, id: usize) -> Option<&'a [u8]> {
        let at = usize::from(*self.slot.get(id)?);
        let s = self.spans.get(at.checked_sub(1)?)?;
        let t: &'a [u8] = self.text.as_bytes();
        t.get(usize::from(s.v0)..usize::from(s.v1))
    }

    #[inline(always)]
    fn slice(&self, a: u16, b: u16) -> &'a str {
        let t: &'a str = self.text;
        t.get(usize::from(a)..usize::from(b)).unwrap_or("")
    }

    /// The message text of the line, from the batch head (or first field) to the end of line.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Raw value of the first field whose key equals `key` exactly, e.g. `get("#running-req")`.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        if let Some(id) = key_id(key.as_bytes()) {
            return self.by_id(id);
        }
        self.spans[..usize::from(self.len)]
            .iter()
            .find(|s| self.slice(s.k0, self.key_end(s)) == key)
            .map(|s| self.slice(s.v0, s.v1))
    }

    /// All `(key, value)` pairs in line order (at most [`MAX_FIELDS`]).
    pub fn fields(&self) -> impl Iterator<Item = (&'a str, &'a str)> + '_ {
        self.spans[..usize::from(self.len)]
            .iter()
            .map(|s| (self.slice(s.k0, self.key_end(s)), self.slice(s.v0, s.v1)))
    }

    /// The `(key, value)` pairs whose key is not in [`KNOWN_KEYS`] (e.g. sglang-jax's
    /// `#cache_miss`); new SGLang fields show up here.
    pub fn unknown_fields(&self) -> impl Iterator<Item = (&'a str, &'a str)> + '_ {
        self.fields()
            .filter(|(k, _)| key_id(k.as_bytes()).is_none())
    }

    /// Number of fields kept.
    pub fn field_count(&self) -> usize {
        usize::from(self.len)
    }

    /// Fields dropped because the line had more than [`MAX_FIELDS`].
    pub fn overflow_fields(&self) -> u16 {
        self.overflow
    }

    /// Comma-separated fragments that were not `key: value` (e.g. `#running-:` in a line mangled
    /// by a paste). A line with broken fragments still yields its good fields.
    pub fn broken_fields(&self) -> u16 {
        self.broken
    }

    /// The first present key of `ids` as an integer, if it parses and is sound for the key
    /// ([`crate::values`]).
    #[inline(always)]
    fn u64_of(&self, ids: &[usize]) -> Option<u64> {
        let (k, v) = ids.iter().find_map(|&k| Some((k, self.bytes_by_id(k)?)))?;
        let n = parse_u64_bytes(v)?;
        // seen sound by the splitter (a clear `check` bit): admitted without the range check
        (self.sound(k) || admits_u64(k, n)).then_some(n)
    }

    /// Whether the first field of known key `id`, a key whose values are checked, was seen
    /// sound by a splitter (its `check` bit is clear): a value that parses is then within its
    /// class's limits (the strict-form splitter clears it only for at most 7 digits with at
    /// most one `.`, a fraction only as `0.…`: [`FAST_SAFE`]; the general one never does).
    #[inline(always)]
    fn sound(&self, id: usize) -> bool {
        self.check >> (id % 64) & 1 == 0 && FAST_SAFE.get(id).is_some_and(|&c| c != UNCHECKED)
    }

    /// The first present key of `ids` as a number, if it parses and is sound for the key.
    #[inline(always)]
    fn f64_of(&self, ids: &[usize]) -> Option<f64> {
        let (k, v) = ids.iter().find_map(|&k| Some((k, self.bytes_by_id(k)?)))?;
        let x = parse_f64_bytes(v)?;
        (self.sound(k) || admits_f64(k, x)).then_some(x)
    }

    /// Whether the line has no broken fragment, no field past [`MAX_FIELDS`] and no value
    /// to look at ([`BatchLine::rejected_fields`] is then empty without a look): the usual
    /// line, counted without a second pass over its fields.
    #[inline]
    pub(crate) fn is_clean(&self) -> bool {
        self.check == 0 && self.broken == 0 && self.overflow == 0
    }

    /// The fields whose values were set aside as impossible (non-finite, negative, above the
    /// quantity's range, or not a number of the key's kind; see [`crate::values`]), in the order
    /// of [`KNOWN_KEYS`]; only the first field of each key counts (as for the accessors, which
    /// return `None` for these). Unknown keys and flags are never rejected.
    pub fn rejected_fields(&self) -> impl Iterator<Item = RejectedField<'a>> + '_ {
        let mut bits = self.check;
        std::iter::from_fn(move || {
            while bits != 0 {
                let id = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if let Some(r) = self.rejected(id) {
                    return Some(r);
                }
            }
            None
        })
    }

    /// The first field of known key `id`, if its value is not sound.
    #[inline]
    fn rejected(&self, id: usize) -> Option<RejectedField<'a>> {
        let at = usize::from(*self.slot.get(id)?);
        let s = self.spans.get(at.checked_sub(1)?)?;
        let class = *KEY_CLASS.get(id)?;
        let bytes = self
            .text
            .as_bytes()
            .get(usize::from(s.v0)..usize::from(s.v1))?;
        // the common case first: a sound value, seen on its bytes alone
        class.check(bytes)?;
        let v = self.slice(s.v0, s.v1);
        let reason = self.rejection(id, v)?;
        Some(RejectedField {
            key: self.slice(s.k0, self.key_end(s)),
            value: v,
            reason,
        })
    }

    /// Why the value `v` of known key `id` is not sound, if it is not. The hybrid forms
    /// `#token: full=N, swa=M` and `token usage: full=X, swa=Y` are checked part by part.
    fn rejection(&self, id: usize, v: &str) -> Option<Rejection> {
        let class = KEY_CLASS[id];
        if class == ValueClass::Unchecked {
            return None;
        }
        let r = class.check(v.as_bytes())?;
        if (id == const { kid("#token") } || id == const { kid("token usage") })
            && v.as_bytes().contains(&b'=')
        {
            return ["full", "swa"]
                .iter()
                .filter_map(|p| sub_value(v, p))
                .find_map(|x| class.check(x.as_bytes()));
        }
        Some(r)
    }

    /// `#running-req` (v0.1: `#running_req`; mixed prefill: the head's count): requests in the
    /// running decode batch. Unit: requests.
    #[inline]
    pub fn running_req(&self) -> Option<u64> {
        self.u64_of(&[const { kid("#running-req") }, const { kid("#running_req") }])
    }

    /// `#queue-req` (v0.1 prefill: `#remaining_req`): waiting-queue length. Unit: requests.
    #[inline]
    pub fn queue_req(&self) -> Option<u64> {
        self.u64_of(&[const { kid("#queue-req") }, const { kid("#remaining_req") }])
    }

    /// KV slots in use: `#token`, or `#full token` (hybrid SWA/SSM), or the `full=` part of
    /// v0.4.9's `#token: full=N, swa=M`. Unit: tokens.
    #[inline]
    pub fn num_token(&self) -> Option<u64> {
        const K: usize = kid("#token");
        if let Some(v) = self.bytes_by_id(K) {
            return match parse_u64_bytes(v) {
                Some(n) => Some(n),
                None => self.part(K, "full").and_then(parse_u64),
            }
            .filter(|&n| self.sound(K) || admits_u64(K, n));
        }
        self.u64_of(&[const { kid("#full token") }])
    }

    /// KV slots in use in the sliding-window pool: `#swa token` or the `swa=` part of
    /// `#token: full=N, swa=M`. Unit: tokens.
    pub fn num_swa_token(&self) -> Option<u64> {
        const K: usize = kid("#token");
        if let Some(v) = self.by_id(const { kid("#swa token") }) {
            return parse_u64(v).filter(|&n| admits_u64(K, n));
        }
        self.part(K, "swa")
            .and_then(parse_u64)
            .filter(|&n| admits_u64(K, n))
    }

    /// KV pool usage `#token / max_total_num_tokens`: `token usage`, or `full token usage`
    /// (hybrid), or the `full=` part of `token usage: full=X, swa=Y`. Unit: fraction 0–1.
    #[inline]
    pub fn token_usage(&self) -> Option<f64> {
        const K: usize = kid("token usage");
        if let Some(v) = self.bytes_by_id(K) {
            return match parse_f64_bytes(v) {
                Some(x) => Some(x),
                None => self.part(K, "full").and_then(parse_f64),
            }
            .filter(|&x| self.sound(K) || admits_f64(K, x));
        }
        self.f64_of(&[const { kid("full token usage") }])
    }

    /// Sliding-window pool usage: `swa token usage` or the `swa=` part of `token usage`.
    /// Unit: fraction 0–1.
    pub fn swa_token_usage(&self) -> Option<f64> {
        const K: usize = kid("token usage");
        if let Some(v) = self.by_id(const { kid("swa token usage") }) {
            return parse_f64(v).filter(|&x| admits_f64(K, x));
        }
        self.part(K, "swa")
            .and_then(parse_f64)
            .filter(|&x| admits_f64(K, x))
    }

    /// `mamba num`: used mamba-state slots (hybrid SSM). Unit: slots (requests).
    pub fn mamba_num(&self) -> Option<u64> {
        self.u64_of(&[const { kid("mamba num") }])
    }

    /// `mamba usage`: fraction of the mamba-state pool in use. Unit: fraction 0–1.
    pub fn mamba_usage(&self) -> Option<f64> {
        self.f64_of(&[const { kid("mamba usage") }])
    }

    /// `gen throughput (token/s)`: tokens generated since the previous Decode line ÷ wall time
    /// since it (includes prefill and idle time). Unit: tokens/s.
    #[inline]
    pub fn gen_throughput(&self) -> Option<f64> {
        self.f64_of(&[const { kid("gen throughput (token/s)") }])
    }

    /// `input throughput (token/s)` (prefill lines, PD v0.4.7.post1+, all v0.5.9+). Unit: tokens/s.
    pub fn input_throughput(&self) -> Option<f64> {
        self.f64_of(&[const { kid("input throughput (token/s)") }])
    }

    /// `#new-seq` (v0.1: `#seq`): requests in this prefill batch. Unit: requests.
    pub fn new_seq(&self) -> Option<u64> {
        self.u64_of(&[const { kid("#new-seq") }, const { kid("#seq") }])
    }

    /// `#new-token` (v0.1: `#new_token`): tokens computed in this prefill batch. Unit: tokens.
    pub fn new_token(&self) -> Option<u64> {
        self.u64_of(&[const { kid("#new-token") }, const { kid("#new_token") }])
    }

    /// `#cached-token` (v0.1: `#cached_token`): prefix tokens reused from the radix cache.
    /// Unit: tokens.
    pub fn cached_token(&self) -> Option<u64> {
        self.u64_of(&[
            const { kid("#cached-token") },
            const { kid("#cached_token") },
        ])
    }

    /// `cache hit rate: 12.34%` (≤ v0.4.3.post2, cumulative since start; v0.1:
    /// `tree_cache_hit_rate`). Unit: fraction 0–1 (the printed percent / 100).
    pub fn cache_hit_rate(&self) -> Option<f64> {
        [
            const { kid("cache hit rate") },
            const { kid("tree_cache_hit_rate") },
        ]
        .iter()
        .find_map(|&k| self.by_id(k))
        .and_then(parse_percent_fraction)
        .filter(|&x| ValueClass::Fraction.admits_f64(x))
    }

    /// `#pending-token` (v0.5.11+): tokens of all waiting requests plus the rest of the
    /// in-progress chunk. Unit: tokens.
    pub fn pending_token(&self) -> Option<u64> {
        self.u64_of(&[const { kid("#pending-token") }])
    }

    /// `accept len`: mean accepted tokens per request per verify step, bonus included
    /// (speculative decoding). Unit: tokens/step.
    pub fn accept_len(&self) -> Option<f64> {
        self.f64_of(&[const { kid("accept len") }])
    }

    /// `accept rate` (v0.5.3.post2+; three definitions, spec §2.5). Unit: fraction 0–1.
    pub fn accept_rate(&self) -> Option<f64> {
        self.f64_of(&[const { kid("accept rate") }])
    }

    /// The graph flag `cuda graph` / `cpu graph` / `npu graph` / `musa graph` (any `<word> graph`):
    /// whether the last batch ran as a captured graph.
    pub fn graph(&self) -> Option<bool> {
        let (s, _) = self.graph_field()?;
        parse_bool(
            self.text
                .as_bytes()
                .get(usize::from(s.v0)..usize::from(s.v1))?,
        )
    }

    /// The graph flag's device word and value at once ([`BatchLine::graph_device`],
    /// [`BatchLine::graph`]: the field is found once): `None` without a flag.
    pub fn graph_flag(&self) -> Option<(&'a str, Option<bool>)> {
        let (s, id) = self.graph_field()?;
        let device = match id {
            Some(id) => KNOWN_KEYS.get(id)?.strip_suffix(" graph")?,
            None => self.slice(s.k0, self.key_end(s)).strip_suffix(" graph")?,
        };
        let on = self
            .text
            .as_bytes()
            .get(usize::from(s.v0)..usize::from(s.v1))
            .and_then(parse_bool);
        Some((device, on))
    }

    /// The device word of the graph flag (`cuda`, `cpu`, `npu`, `musa`, or the word of an
    /// unknown `<word> graph`). A known graph key's device is the key's word, also when a
    /// terminal cut merged other text into the key (`recover_cut_keys`: `…:cuda graph` is read
    /// as `cuda graph`, so its device is `cuda`).
    pub fn graph_device(&self) -> Option<&'a str> {
        match self.graph_field()? {
            (_, Some(id)) => KNOWN_KEYS.get(id)?.strip_suffix(" graph"),
            (s, None) => {
                let k = self.slice(s.k0, self.key_end(s));
                k.strip_suffix(" graph")
            }
        }
    }

    /// The field of the graph flag: the first whose key is `<word> graph` (`word`
    /// alphanumeric) or is a known graph key's, with that known key's id.
    fn graph_field(&self) -> Option<(&Span, Option<usize>)> {
        const GRAPH_KEYS: [usize; 4] = [
            kid("cuda graph"),
            kid("cpu graph"),
            kid("npu graph"),
            kid("musa graph"),
        ];
        // the first field of a known graph key, as its slot (1 + its index): the least slot
        // of the four, an absent key's 0 taken as 256 (a branch-free minimum of four bytes)
        let len = usize::from(self.len);
        let (least, id) = GRAPH_KEYS
            .iter()
            .map(|&id| (self.slot[id].wrapping_sub(1), id))
            .fold((u8::MAX, 0), |a, b| if b.0 < a.0 { b } else { a });
        let known = (least != u8::MAX).then(|| usize::from(least) + 1);
        // every field a known key, none twice (as many slots in use as fields): no unknown
        // `<word> graph` can come first, the known one is the flag
        if usize::from(self.known) == len {
            let at = known?.checked_sub(1)?;
            return Some((self.spans.get(at)?, Some(id)));
        }
        // else the scan ends at the known one: only the fields before it can hold another
        // `<word> graph` (an unknown device); on bytes, no char-boundary checks per field
        let end = known.unwrap_or(len).min(len);
        let t = self.text.as_bytes();
        let before = self.spans[..end].iter().find(|s| {
            let ke = usize::from(self.key_end(s));
            t.get(usize::from(s.k0)..ke)
                .and_then(|k| k.strip_suffix(b" graph"))
                .is_some_and(|w| !w.is_empty() && w.iter().all(u8::is_ascii_alphanumeric))
        });
        match before {
            Some(s) => Some((s, None)),
            None => Some((self.spans.get(known?.checked_sub(1)?)?, Some(id))),
        }
    }

    /// `pre-allocated usage` (PD decode server): KV pre-allocated for incoming transfers ÷
    /// `max_total_num_tokens`. Unit: fraction 0–1.
    pub fn pre_allocated_usage(&self) -> Option<f64> {
        self.f64_of(&[const { kid("pre-allocated usage") }])
    }

    /// The literal `#prealloc-req`. On a PD decode server: requests waiting for KV
    /// pre-allocation; on a PD prefill server (v0.5.3 – v0.5.11): the bootstrap queue (see
    /// [`BatchLine::bootstrap_req`]). Unit: requests.
    pub fn prealloc_req(&self) -> Option<u64> {
        self.u64_of(&[const { kid("#prealloc-req") }])
    }

    /// PD prefill bootstrap queue under any of its names: `#bootstrap-req` (v0.5.12+),
    /// `#unbootstrapped-req` (v0.4.6 – v0.5.2), or `#prealloc-req` on a prefill line
    /// (v0.5.3 – v0.5.11). Unit: requests.
    pub fn bootstrap_req(&self) -> Option<u64> {
        self.u64_of(&[
            const { kid("#bootstrap-req") },
            const { kid("#unbootstrapped-req") },
        ])
        .or_else(|| {
            if self.kind == BatchKind::Prefill {
                self.prealloc_req()
            } else {
                None
            }
        })
    }

    /// `#transfer-req` (PD decode): requests receiving KV. Unit: requests.
    pub fn transfer_req(&self) -> Option<u64> {
        self.u64_of(&[const { kid("#transfer-req") }])
    }

    /// `#retracted-req` (PD decode): retracted requests waiting to resume. Unit: requests.
    pub fn retracted_req(&self) -> Option<u64> {
        self.u64_of(&[const { kid("#retracted-req") }])
    }

    /// `#inflight-req` (PD prefill, v0.5.3+; `#transferring-req` before): prefilled requests
    /// whose KV is still being sent. Unit: requests.
    pub fn inflight_req(&self) -> Option<u64> {
        self.u64_of(&[
            const { kid("#inflight-req") },
            const { kid("#transferring-req") },
        ])
    }

    /// `#optimistic-req` (PD prefill, v0.5.16+). Unit: requests.
    pub fn optimistic_req(&self) -> Option<u64> {
        self.u64_of(&[const { kid("#optimistic-req") }])
    }

    /// `waiting-image-req` (EPD language-only servers). Unit: requests.
    pub fn waiting_image_req(&self) -> Option<u64> {
        self.u64_of(&[const { kid("waiting-image-req") }])
    }

    /// `cap len` (DSpark speculative decoding, v0.5.16+). Unit: tokens.
    pub fn cap_len(&self) -> Option<f64> {
        self.f64_of(&[const { kid("cap len") }])
    }

    /// `fwd occupancy: X%` (v0.5.11+, `SGLANG_ENABLE_METRICS_DEVICE_TIMER=1`): the device
    /// timer's GPU-busy time of forward passes over the logging window's wall time
    /// (`scheduler_metrics_mixin.py`); `nan%` is a window the timer did not measure
    /// ([`FwdOccupancy::Idle`]).
    pub fn fwd_occupancy(&self) -> Option<FwdOccupancy> {
        let v = self.by_id(const { kid("fwd occupancy") })?;
        let t = v.trim_end();
        let t = t.strip_suffix('%').unwrap_or(t).trim_end();
        if t.eq_ignore_ascii_case("nan") {
            return Some(FwdOccupancy::Idle);
        }
        parse_percent_fraction(v)
            .filter(|&x| ValueClass::Fraction.admits_f64(x))
            .map(FwdOccupancy::Busy)
    }

    /// MFU suffix `est. decode TFLOPS/s (per GPU)` or `est. prefill TFLOPS/s (per GPU)`
    /// (v0.5.10+, `--enable-mfu-metrics`). Unit: TFLOP/s per GPU.
    pub fn est_tflops_per_gpu(&self) -> Option<f64> {
        self.f64_of(&[
            const { kid("est. decode TFLOPS/s (per GPU)") },
            const { kid("est. prefill TFLOPS/s (per GPU)") },
        ])
    }

    /// MFU suffix `est. read BW (GB/s per GPU)`. Unit: GB/s per GPU.
    pub fn est_read_bw_gbps(&self) -> Option<f64> {
        self.f64_of(&[const { kid("est. read BW (GB/s per GPU)") }])
    }

    /// MFU suffix `est. write BW (GB/s per GPU)`. Unit: GB/s per GPU.
    pub fn est_write_bw_gbps(&self) -> Option<f64> {
        self.f64_of(&[const { kid("est. write BW (GB/s per GPU)") }])
    }

    /// The in-message ISO stamp of v0.4.9.post1 – v0.4.9.post2 (`timestamp: 2025-07-10T08:01:02.123456`).
    pub fn timestamp_field(&self) -> Option<crate::Timestamp> {
        self.by_id(const { kid("timestamp") })
            .and_then(crate::timestamp::parse_timestamp)
            .map(|(t, _)| t)
    }
}

/// Why a line that carries a batch marker is not a batch event.
pub(crate) type BatchError = &'static str;

/// Parses a message that starts with a batch head (`text` begins at `Decode`/`Prefill`/`Prefil`).
#[cfg(test)]
pub(crate) fn parse_standard(text: &str) -> Result<BatchLine<'_>, BatchError> {
    let mut ev = Event::Other;
    parse_standard_into(text, &mut ev, &mut KeyOrder::new(true));
    into_result(ev)
}

#[cfg(test)]
fn into_result(ev: Event<'_>) -> Result<BatchLine<'_>, BatchError> {
    match ev {
        Event::Batch(b) => Ok(b),
        Event::Malformed { reason } => Err(reason),
        _ => Err("not a batch line"),
    }
}

/// Writes `Event::Batch` (or `Event::Malformed` with the reason) for a message that starts with a
/// batch head into `out`, building the (large) batch record in place instead of moving it.
///
/// Head: `Decode batch` / `Prefill batch` / `Prefil batch`, optional ` [N]` (iteration),
/// optional `(mixed #running-req: N)`, then `.`, `,`, `:` or ` #` before the fields.
pub(crate) fn parse_standard_into<'a>(text: &'a str, out: &mut Event<'a>, order: &mut KeyOrder) {
    if text.len() > MAX_BATCH_LINE {
        *out = Event::Malformed {
            reason: "batch line longer than 64 KiB",
        };
        return;
    }
    let b = text.as_bytes();
    let head = match batch_head(b) {
        Ok((rest, head)) => (offset_of(b, rest), head),
        Err(_) => {
            *out = Event::Malformed {
                reason: "batch marker without a batch head",
            };
            return;
        }
    };
    let (i, (kind, iter, mixed)) = head;
    let body = match batch_separator(&b[i..]) {
        Ok((rest, ())) => offset_of(b, rest),
        Err(reason) => {
            *out = Event::Malformed { reason };
            return;
        }
    };
    let iter = iter.map(|d| &text[d.0..d.1]);
    let mixed = mixed.map(|(k0, v0, v1)| (k0, k0 + "#running-req".len(), v0, v1));
    let form = if mixed.is_some() {
        BatchForm::Mixed
    } else {
        BatchForm::Standard
    };
    *out = Event::Batch(BatchLine::new(kind, form, text));
    let Event::Batch(line) = out else {
        return; // ok: unreachable, assigned just above
    };
    line.iter = iter.and_then(parse_u64);
    if let Some((k0, k1, v0, v1)) = mixed {
        line.push(k0, k1, v0, v1);
        split_fields(line, body, b',');
    } else {
        match order
            .enabled
            .then(|| split_fast(line, body, order))
            .flatten()
        {
            Some(true) => return, // fields found, one of them numeric: valid
            Some(false) => {}
            None => {
                // the fast splitter gave up part-way (or did not run): the general one, afresh
                line.spans = [Span::default(); MAX_FIELDS];
                line.slot = [0; N_KNOWN];
                line.known = 0;
                line.len = 0;
                split_fields(line, body, b',');
            }
        }
    }
    if line.broken > 0 {
        recover_cut_keys(line);
    }
    if let Err(reason) = validate(line) {
        *out = Event::Malformed { reason };
    }
}

/// The shortest tail of a known key (bytes) that a merged key must end with to be read as that
/// key by [`recover_cut_keys`]: long enough that no two keys of [`KNOWN_KEYS`] share it by
/// chance (`-req`, `usage` are shared; `unning-req`, `accept rate` are not).
const MIN_CUT_TAIL: usize = 8;

/// On a damaged line (a fragment that is not `key: value`), reads a field whose key is not
/// known but ends with the tail of exactly one known key as that key, when the line has no
/// field of it already. A terminal that cuts a column out of the middle of a line (the
/// `column`-truncated logs of real-3/021) joins the head of one key to the tail of a later
/// one (`#cached-to` + `unning-req: 45`); the value after the colon is the later key's. Lines
/// without damage are left alone: a new SGLang field may end like a known one.
fn recover_cut_keys(line: &mut BatchLine<'_>) {
    let b = line.text.as_bytes();
    for i in 0..usize::from(line.len) {
        let s = line.spans[i];
        let k = &b[usize::from(s.k0)..usize::from(line.key_end(&s))];
        if key_id(k).is_some() {
            continue;
        }
        // the known key with the longest common tail, if only one has it
        let (mut best, mut len, mut tie) = (None, 0, false);
        for (id, known) in KNOWN_KEYS.iter().enumerate() {
            let kn = known.as_bytes();
            let l = k
                .iter()
                .rev()
                .zip(kn.iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            // the merged key's head must be left over: a key that is a known key cut only at
            // its start (`en throughput (token/s)`) is that key's, not another's with a
            // shorter common tail, and is `parse_cut_decode`'s
            if l >= k.len() {
                best = None;
                tie = true;
                break;
            }
            if l < MIN_CUT_TAIL || l < len {
                continue;
            }
            tie = l == len;
            (best, len) = (Some(id), l);
        }
        if let Some(id) = best.filter(|&id| !tie && line.slot[id] == 0) {
            // ok: i < MAX_FIELDS (32) fits a u8
            line.slot[id] = i as u8 + 1;
            line.known += 1;
            line.check |= u64::from(FAST_SAFE[id] != UNCHECKED) << id;
        }
    }
}

/// Offsets `(start, end)` of a part of the batch text.
type Range = (usize, usize);

/// `Decode batch` / `Prefill batch` / `Prefil batch`, an optional iteration counter ` [N]`
/// (its digits' offsets) and an optional `(mixed #running-req: N)` (offsets of the key, the
/// value start and end). Offsets are into the input `b`, the message from the head on.
#[allow(clippy::type_complexity)]
fn batch_head(b: &[u8]) -> PResult<'_, (BatchKind, Option<Range>, Option<(usize, usize, usize)>)> {
    let kind = alt((
        value(BatchKind::Decode, lit(b"Decode batch")),
        value(BatchKind::Prefill, lit(b"Prefill batch")),
        value(BatchKind::Prefill, lit(b"Prefil batch")),
    ));
    let at = |r: &[u8]| pos_in(b, r);
    let iter = delimited(lit(b" ["), digit1, byte(b']')).map(|d: &[u8]| {
        let s = at(d);
        (s, s + d.len())
    });
    let mixed = delimited(
        lit(b"(mixed "),
        preceded(lit(b"#running-req: "), digit1),
        byte(b')'),
    )
    .map(|d: &[u8]| {
        let v0 = at(d);
        (v0 - "#running-req: ".len(), v0, v0 + d.len())
    });
    (kind, opt(iter), opt(mixed)).parse(b)
}

/// What separates the batch head from its fields: `.`, `,` or `:` (consumed), or ` #` (kept:
/// the first key starts with it). The error is the reason the line is malformed.
fn batch_separator(i: &[u8]) -> Result<(&[u8], ()), BatchError> {
    let mut sep = alt((
        value((), byte_if(|c| matches!(c, b'.' | b',' | b':'))),
        value((), peek(tag(&b" #"[..]))),
    ));
    match sep.parse(i) {
        Ok(r) => Ok(r),
        Err(_) if i.is_empty() => Err("batch head without fields"),
        Err(_) => Err("batch marker not followed by a separator"),
    }
}

/// A batch line needs at least one `key: value` field and at least one value that looks like
/// data (a number or a bool); this rejects e.g. a traceback's source line
/// `logger.info(f"Decode batch. #running-req: {n}")`.
fn validate(line: &BatchLine<'_>) -> Result<(), BatchError> {
    if line.len == 0 {
        return Err("batch line without key: value fields");
    }
    let has_data = line.spans[..usize::from(line.len)].iter().any(|s| {
        let v = line.slice(s.v0, s.v1);
        let b = v.as_bytes();
        let first = if b.first() == Some(&b'-') {
            b.get(1)
        } else {
            b.first()
        };
        first.is_some_and(u8::is_ascii_digit)
            || v.starts_with("True")
            || v.starts_with("False")
            || v.starts_with("full=")
    });
    if !has_data {
        return Err("batch line without any numeric value");
    }
    Ok(())
}

/// Parses `new fill batch. #seq: N. #cached_token: N. …` (≤ v0.1.16) into `out` (in place).
pub(crate) fn parse_legacy_fill_into<'a>(text: &'a str, out: &mut Event<'a>) {
    if text.len() > MAX_BATCH_LINE {
        *out = Event::Malformed {
            reason: "batch line longer than 64 KiB",
        };
        return;
    }
    let mut head = tag::<_, _, ()>(&b"new fill batch"[..]);
    let Ok((rest, _)) = head.parse(text.as_bytes()) else {
        *out = Event::Malformed {
            reason: "batch marker without a batch head",
        };
        return;
    };
    if byte(b'.').parse(rest).is_err() {
        *out = Event::Malformed {
            reason: "batch marker not followed by a separator",
        };
        return;
    }
    *out = Event::Batch(BatchLine::new(
        BatchKind::Prefill,
        BatchForm::LegacyFill,
        text,
    ));
    let Event::Batch(line) = out else {
        return; // ok: unreachable, assigned just above
    };
    split_fields(line, "new fill batch.".len(), b'.');
    if let Err(reason) = validate(line) {
        *out = Event::Malformed { reason };
    }
}

/// Parses the head-less v0.1 decode stats line `#running-req: N, #token: N, …`.
pub(crate) fn parse_legacy_stats(text: &str) -> Option<BatchLine<'_>> {
    if text.len() > MAX_BATCH_LINE {
        return None;
    }
    let mut line = BatchLine::new(BatchKind::Decode, BatchForm::LegacyStats, text);
    split_fields(&mut line, 0, b',');
    (line.len > 0 && line.running_req().is_some()).then_some(line)
}

/// Parses a decode line whose start was cut off (see [`BatchForm::CutStart`]): a first
/// fragment `K: N` whose key `K` is a non-empty tail of `#running-req`, followed by `, #token: `,
/// and `gen throughput (token/s)` later in the line. `None` for anything else.
pub(crate) fn parse_cut_decode(text: &str) -> Option<BatchLine<'_>> {
    const RUNNING: &str = "#running-req";
    if text.len() > MAX_BATCH_LINE || !text.contains("gen throughput (token/s): ") {
        return None;
    }
    let (first, rest) = text.split_once(", ")?;
    let (key, value) = first.split_once(": ")?;
    if key.is_empty()
        || key.len() >= RUNNING.len()
        || !RUNNING.ends_with(key)
        || value.is_empty()
        || !value.bytes().all(|c| c.is_ascii_digit())
        || !rest.starts_with("#token: ")
    {
        return None;
    }
    let mut line = BatchLine::new(BatchKind::Decode, BatchForm::CutStart, text);
    split_fields(&mut line, 0, b',');
    let id = const { kid("#running-req") };
    let first = line.spans[..usize::from(line.len)]
        .iter()
        .position(|s| s.k0 == 0)?;
    if line.slot[id] == 0 {
        line.slot[id] = first as u8 + 1;
        line.known += 1;
    }
    validate(&line).ok()?;
    (line.running_req().is_some() && line.num_token().is_some()).then_some(line)
}

/// What the previous batch lines looked like: for each batch kind and each key (or the line
/// start), the key that followed it last time. SGLang prints the same keys in the same order on
/// line after line, so [`split_fast`] checks the predicted key with one compare at the place
/// where it must start instead of searching for `: ` and hashing the key.
#[derive(Clone, Debug)]
pub(crate) struct KeyOrder {
    /// `next[kind][prev]`: the last two distinct keys that followed (index into
    /// [`KNOWN_KEYS`], [`NO_KEY`]: no guess), most recent first; `prev` is 0 at the line
    /// start, `1 + id` after known key `id`, `N_KNOWN + 1` after an unknown key. Two guesses
    /// cover a field that is present on some lines only (`accept len`).
    next: Guesses,
    /// The line being split by [`split_fast`], followed by zeros (see [`split_padded`]).
    pad: [u8; PAD_LEN],
    /// Whether [`split_fast`] runs at all (off: only the general splitter, for tests).
    pub(crate) enabled: bool,
}

/// See [`KeyOrder::next`].
type Guesses = [[[u8; 2]; N_KNOWN + 2]; 2];

impl KeyOrder {
    pub(crate) fn new(enabled: bool) -> Self {
        KeyOrder {
            next: [[[NO_KEY; 2]; N_KNOWN + 2]; 2],
            pad: [0; PAD_LEN],
            enabled,
        }
    }
}

/// The two keys predicted after `prev` on a line of `kind`.
#[inline(always)]
fn guess(next: &Guesses, kind: usize, prev: usize) -> (usize, usize) {
    let g = next
        .get(kind)
        .and_then(|r| r.get(prev))
        .copied()
        .unwrap_or([NO_KEY; 2]);
    (usize::from(g[0]), usize::from(g[1]))
}

/// Records that key `id` followed `prev`.
#[inline]
fn learn(next: &mut Guesses, kind: usize, prev: usize, id: u8) {
    if let Some(g) = next.get_mut(kind).and_then(|r| r.get_mut(prev))
        && g[0] != id
    {
        *g = [id, g[0]];
    }
}

/// Longest `key: ` of [`KNOWN_KEYS`] (bytes).
const KEY_COLON_MAX: usize = 40;

/// A known key followed by `: `: its bytes, its first 32 bytes as four little-endian words with
/// the masks of the bytes that count, and its length.
#[derive(Clone, Copy)]
struct KeyPat {
    bytes: [u8; KEY_COLON_MAX],
    w: [u64; 4],
    m: [u64; 4],
    len: usize,
}

/// [`KeyPat`] of each of [`KNOWN_KEYS`], by index.
const KEY_COLON: [KeyPat; N_KNOWN] = {
    let mut t = [KeyPat {
        bytes: [0; KEY_COLON_MAX],
        w: [0; 4],
        m: [0; 4],
        len: 0,
    }; N_KNOWN];
    let mut i = 0;
    while i < N_KNOWN {
        let k = KNOWN_KEYS[i].as_bytes();
        assert!(k.len() + 2 <= KEY_COLON_MAX, "raise KEY_COLON_MAX");
        assert!(k[0] != b' ' && k[k.len() - 1] != b' ');
        let mut j = 0;
        while j < k.len() + 2 {
            let c = if j < k.len() {
                k[j]
            } else if j == k.len() {
                b':'
            } else {
                b' '
            };
            // the fast splitter relies on keys without `:`/`,` (and without NUL: padding)
            assert!(j >= k.len() || (c != b':' && c != b',' && c != 0));
            t[i].bytes[j] = c;
            if j < 32 {
                t[i].w[j / 8] |= (c as u64) << (8 * (j % 8));
                t[i].m[j / 8] |= 0xff << (8 * (j % 8));
            }
            j += 1;
        }
        t[i].len = k.len() + 2;
        i += 1;
    }
    t
};

/// The 8 bytes `b[p..p + 8]` of a padded copy as a little-endian word. `p & (C - 1)` is `p`
/// for every offset the fast splitter computes (all are at most the line length, below `C`),
/// and the mask lets the compiler drop the bounds check (`b` has 64 bytes past `C`).
#[inline(always)]
fn ld<const C: usize, const M: usize>(b: &[u8; M], p: usize) -> u64 {
    const { assert!(C.is_power_of_two() && M >= C + 64) };
    let i = p & (C - 1);
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(w)
}

/// Byte `p` of a padded copy (see [`ld`]).
#[inline(always)]
fn at<const C: usize, const M: usize>(b: &[u8; M], p: usize) -> u8 {
    b[p & (C - 1)]
}

/// Whether the padded copy `b` holds `k` (a key and `: `) at `p`: masked word compares (the
/// padding is zeros, which no key byte is, so a match ends inside the line).
#[inline(always)]
fn key_at<const C: usize, const M: usize>(b: &[u8; M], p: usize, k: &KeyPat) -> bool {
    let d = ((ld::<C, M>(b, p) ^ k.w[0]) & k.m[0]) | ((ld::<C, M>(b, p + 8) ^ k.w[1]) & k.m[1]);
    if d != 0 {
        return false;
    }
    if k.len <= 16 {
        return true;
    }
    let d =
        ((ld::<C, M>(b, p + 16) ^ k.w[2]) & k.m[2]) | ((ld::<C, M>(b, p + 24) ^ k.w[3]) & k.m[3]);
    if d != 0 {
        return false;
    }
    let i = p & (C - 1);
    k.len <= 32 || b.get(i + 32..i + k.len) == k.bytes.get(32..k.len)
}

/// Length of the run of ASCII digits and `.` at the start of the little-endian word `w`
/// (bytes), 0 ..= 8, and whether that run holds at most one `.` (none when `integer`).
#[inline(always)]
fn digit_dot_run(w: u64, integer: bool) -> (usize, bool) {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HI: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    // digit: (c ^ '0') < 10; high bit of each byte set where it is not (7-bit adds: no carries)
    let t = w ^ (ONES * 0x30);
    let not_digit = (((t & LO7) + ONES * 0x76) | t) & HI;
    // `.`: byte == 0x2e; high bit set where it is not
    let d = w ^ (ONES * 0x2e);
    let not_dot = (((d & LO7) + LO7) | d) & HI;
    let stop = not_digit & not_dot;
    let run = (stop.trailing_zeros() / 8) as usize;
    // the `.`s before the first byte that stops the run (all of them when none does)
    let dots = !not_dot & HI & (stop & stop.wrapping_neg()).wrapping_sub(1);
    let one = if integer {
        dots == 0
    } else {
        dots & dots.wrapping_sub(1) == 0
    };
    (run, one)
}

/// [`FAST_SAFE`]: a count (requests, tokens): a run of at most 7 digits is sound (below 10^7).
const SAFE_INTEGER: u8 = 0;
/// [`FAST_SAFE`]: tokens/s: a run of at most 7 digits with at most one `.` is sound.
const SAFE_FLOAT: u8 = 1;
/// [`FAST_SAFE`]: a fraction, percentage, step length or MFU estimate: sound or not by its
/// value, always looked at by [`BatchLine::rejected_fields`].
const ALWAYS: u8 = 2;
/// [`FAST_SAFE`] of a key whose values are not checked (unknown keys, flags, stamps).
const UNCHECKED: u8 = 3;
/// [`FAST_SAFE`]: a fraction (`token usage`): `0.` and at most 5 digits is sound (below 1, as
/// [`ValueClass::check`] sees it on sight); anything else is looked at.
const SAFE_FRACTION: u8 = 4;

/// How the fast splitter screens each of [`KNOWN_KEYS`] (and one more entry for unknown
/// keys): [`SAFE_INTEGER`], [`SAFE_FLOAT`], [`SAFE_FRACTION`], [`ALWAYS`] or [`UNCHECKED`].
const FAST_SAFE: [u8; N_KNOWN + 1] = {
    let mut t = [UNCHECKED; N_KNOWN + 1];
    let mut i = 0;
    while i < N_KNOWN {
        t[i] = match KEY_CLASS[i] {
            ValueClass::Requests | ValueClass::Tokens => SAFE_INTEGER,
            ValueClass::Rate => SAFE_FLOAT,
            ValueClass::Fraction => SAFE_FRACTION,
            ValueClass::Percent
            | ValueClass::Occupancy
            | ValueClass::StepTokens
            | ValueClass::Hardware => ALWAYS,
            ValueClass::Unchecked => UNCHECKED,
        };
        i += 1;
    }
    t
};

/// [`ValueClass::plain_len`] of each of [`KNOWN_KEYS`] (and 0 for unknown keys), capped at
/// 255: a plain value shorter than this is sound on sight.
const FAST_PLAIN: [u8; N_KNOWN + 1] = {
    let mut t = [0u8; N_KNOWN + 1];
    let mut i = 0;
    while i < N_KNOWN {
        let p = KEY_CLASS[i].plain_len();
        t[i] = if p > 255 { 255 } else { p as u8 };
        i += 1;
    }
    t
};

/// `True,` as the low 5 bytes of a little-endian word.
const TRUE_COMMA: u64 = u64::from_le_bytes(*b"True,\0\0\0");
/// `False,` as the low 6 bytes of a little-endian word.
const FALSE_COMMA: u64 = u64::from_le_bytes(*b"False,\0\0");

/// `0.` as a little-endian 16-bit word.
const ZERO_DOT: u16 = u16::from_le_bytes(*b"0.");

const _: () = assert!(N_KNOWN <= 64, "BatchLine::check is a u64 over KNOWN_KEYS");

/// Bytes a value may hold on the fast path: ASCII letters, digits, `.`, `%`, `+`, `-` (numbers,
/// percentages, `True`/`False`). Anything else (spaces, `,`, `:`, `=`) sends the line to the
/// general splitter.
const VALUE_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || matches!(b, b'.' | b'%' | b'+' | b'-');
        c += 1;
    }
    t
};

/// Fast splitter for the strict form `key: value, key: value, …` (separator `, `, optional
/// trailing `,`/whitespace), which is every batch line SGLang itself prints. Returns `None`
/// (leaving `line` half-filled, to be reset) as soon as the line leaves that form, else whether
/// some value starts with a digit (then [`validate`] has nothing left to check). On the
/// strict form its spans and slots are exactly those of [`split_fields`]: a key has no `:` or
/// `,` and no edge space, a value only [`VALUE_BYTE`]s, so the general splitter's first `: `
/// and `, ` are the ones seen here and its trimming changes nothing.
///
/// The line is copied into a zero-padded stack buffer first, so that every word load and byte
/// test below needs no bounds check (a zero byte ends every scan: it is no value byte, no
/// key byte, no separator).
#[inline]
fn split_fast(line: &mut BatchLine<'_>, start: usize, order: &mut KeyOrder) -> Option<bool> {
    let n = line.text.len();
    if n < 256 {
        split_padded::<256>(line, start, order)
    } else if n < PAD_CAP {
        split_padded::<PAD_CAP>(line, start, order)
    } else {
        None
    }
}

/// Longest batch message (exclusive) that [`split_fast`] takes, in bytes.
const PAD_CAP: usize = 1024;
/// Size of [`KeyOrder::pad`]: the line plus 64 zero bytes.
const PAD_LEN: usize = PAD_CAP + 64;

/// [`split_fast`] on a copy of the line padded to `M` bytes (the line is shorter than `C`).
#[inline(always)]
fn split_padded<const C: usize>(
    line: &mut BatchLine<'_>,
    start: usize,
    order: &mut KeyOrder,
) -> Option<bool> {
    const M: usize = PAD_LEN;
    let text = line.text.as_bytes();
    let n = text.len();
    // the buffer is reused from line to line: only the 64 bytes after the line need zeroing
    // (no read reaches further than 40 bytes past the line)
    let KeyOrder { next, pad, .. } = order;
    // 32-byte moves (the last one overlapping) instead of a `memcpy` call for the usual
    // 100 - 300 byte line
    if n >= 32 {
        for (d, s) in pad.chunks_exact_mut(32).zip(text.chunks_exact(32)) {
            d.copy_from_slice(s);
        }
        pad.get_mut(n - 32..n)?.copy_from_slice(text.get(n - 32..)?);
    } else {
        pad.get_mut(..n)?.copy_from_slice(text);
    }
    pad.get_mut(n..n + 64)?.fill(0);
    let b: &[u8; M] = pad;
    let ld = |p| ld::<C, M>(b, p);
    let at = |p| at::<C, M>(b, p);
    let kind = line.kind as usize;
    let mut p = start;
    while at(p) == b' ' {
        p += 1;
    }
    let mut prev = 0usize;
    let mut count = 0usize;
    let mut data = false;
    loop {
        if count == MAX_FIELDS {
            return None;
        }
        let (g1, g2) = guess(next, kind, prev);
        let (id, v0) = match KEY_COLON.get(g1) {
            Some(k) if key_at::<C, M>(b, p, k) => (g1, p + k.len),
            _ => other_key::<C, M>(b, text, p, g2, next, kind, prev)?,
        };
        // digits and dots word-wise; the usual `,` after them ends the value (anything else
        // is read by `other_value`)
        let w = ld(v0);
        let safe = FAST_SAFE.get(id).copied().unwrap_or(UNCHECKED);
        let (v1, look) = match short_value(w, id) {
            Ok((len, look)) => (v0 + len, look),
            Err((run, sound)) => other_value::<C, M>(b, v0, w, run, sound, safe)?,
        };
        data |= (w as u8).is_ascii_digit();
        // ok: n < C <= 1024, so offsets fit in u16
        line.spans[count] = Span {
            k0: p as u16,
            v0: v0 as u16,
            v1: v1 as u16,
        };
        count += 1;
        if let Some(s) = line.slot.get_mut(id)
            && *s == 0
        {
            *s = count as u8;
            line.known += 1;
            line.check |= u64::from(look) << id;
        }
        let t = ld(v1);
        if t & 0xffff == u64::from(u16::from_le_bytes(*b", ")) {
            let c = (t >> 16) as u8;
            if !(c == b',' || c.is_ascii_whitespace() || c == 0) {
                p = v1 + 2;
                prev = id + 1;
                continue;
            }
        }
        if text
            .get(v1..)?
            .iter()
            .all(|&c| c == b',' || c.is_ascii_whitespace())
        {
            break;
        }
        return None;
    }
    line.len = count as u8;
    line.strict = true;
    Some(data)
}

/// The usual value at the start of the little-endian word `w` (a line's bytes, zeros past
/// its end), for known key `id` ([`N_KNOWN`] for an unknown key; screened by its
/// [`FAST_SAFE`] class and [`FAST_PLAIN`] length): `Ok((length, look))` for a digit
/// run of 1 to 7 bytes ended by a byte that is no [`VALUE_BYTE`], or the graph flags `True,`
/// / `False,` (ended at the `,`, as the byte loop would end them); `look`: whether
/// [`BatchLine::rejected_fields`] must look at it. `Err((run, sound))` otherwise, what
/// [`digit_dot_run`] says of `w`, for [`other_value`].
#[inline(always)]
fn short_value(w: u64, id: usize) -> Result<(usize, bool), (usize, bool)> {
    let safe = FAST_SAFE.get(id).copied().unwrap_or(UNCHECKED);
    let (run, sound) = digit_dot_run(w, safe == SAFE_INTEGER);
    if run != 0 && run < 8 && !VALUE_BYTE[usize::from((w >> (8 * run)) as u8)] {
        // the run ends the value (at the `,`, a space or the padding); a short digit run of
        // at most one `.` (none for counts) is sound for a screened key (see FAST_SAFE);
        // anything else is looked at by `rejected_fields`
        let look = match safe {
            SAFE_INTEGER | SAFE_FLOAT => !sound,
            SAFE_FRACTION => !(sound && w & 0xffff == u64::from(ZERO_DOT)),
            // a plain value (digits, at most one `.`, a digit among them) shorter than the
            // class's `plain_len` is sound on sight, as `ValueClass::check` says
            ALWAYS => !(sound && run >= 2 && run < usize::from(FAST_PLAIN[id % (N_KNOWN + 1)])),
            _ => false,
        };
        Ok((run, look))
    } else if run == 0 && w & 0xff_ffff_ffff == TRUE_COMMA {
        // the graph flags: not a digit run, so any screened key looks at it
        Ok((4, safe != UNCHECKED))
    } else if run == 0 && w & 0xffff_ffff_ffff == FALSE_COMMA {
        Ok((5, safe != UNCHECKED))
    } else {
        Err((run, sound))
    }
}

/// [`split_padded`]'s key at `p` when the first guess missed: the second guess, else the
/// text up to the first `:` or `,` (which must be `: `, after a key without edge spaces),
/// identified and learnt as the key that follows `prev`. `None`: off the strict form.
#[inline(never)]
fn other_key<const C: usize, const M: usize>(
    b: &[u8; M],
    text: &[u8],
    p: usize,
    g2: usize,
    next: &mut Guesses,
    kind: usize,
    prev: usize,
) -> Option<(usize, usize)> {
    if let Some(k) = KEY_COLON.get(g2)
        && key_at::<C, M>(b, p, k)
    {
        return Some((g2, p + k.len));
    }
    let at = |p| at::<C, M>(b, p);
    let mut c = p;
    while !matches!(at(c), b':' | b',' | 0) {
        c += 1;
    }
    if c == p || at(c) != b':' || at(c + 1) != b' ' {
        return None;
    }
    if at(p) == b' ' || at(c - 1) == b' ' {
        return None;
    }
    let id = key_id(text.get(p..c)?).unwrap_or(N_KNOWN);
    learn(
        next,
        kind,
        prev,
        if id < N_KNOWN { id as u8 } else { NO_KEY },
    );
    Some((id, c + 2))
}

/// [`split_padded`]'s value at `v0` when it is not a digit run ended by `,`: `w` is its first
/// word, `run` / `sound` what [`digit_dot_run`] says of it. The graph flags `True,` /
/// `False,` by one masked compare (as the byte loop would end them, at the `,`), else the
/// [`VALUE_BYTE`]s one by one. Returns the value end and whether `rejected_fields` must look
/// at it; `None` for an empty value.
#[inline(never)]
fn other_value<const C: usize, const M: usize>(
    b: &[u8; M],
    v0: usize,
    w: u64,
    run: usize,
    sound: bool,
    safe: u8,
) -> Option<(usize, bool)> {
    let mut v1 = v0 + run;
    if run == 8 || (w >> (8 * run)) as u8 != b',' {
        if run == 0 && w & 0xff_ffff_ffff == TRUE_COMMA {
            v1 = v0 + 4;
        } else if run == 0 && w & 0xffff_ffff_ffff == FALSE_COMMA {
            v1 = v0 + 5;
        } else {
            while VALUE_BYTE[usize::from(at::<C, M>(b, v1))] {
                v1 += 1;
            }
        }
    }
    if v1 == v0 {
        return None;
    }
    Some((v1, long_look(w, run, sound, v1 - v0, safe)))
}

/// Whether [`BatchLine::rejected_fields`] must look at a value of `len` bytes that
/// [`short_value`] did not take: `w` its first word, `run` / `sound` what [`digit_dot_run`]
/// says of it, `safe` its key's [`FAST_SAFE`] class (sound: a digit run of the whole value,
/// under 8 bytes, at most one `.`, a fraction only as `0.…`).
#[inline]
fn long_look(w: u64, run: usize, sound: bool, len: usize, safe: u8) -> bool {
    match safe {
        SAFE_INTEGER | SAFE_FLOAT => !(sound && run < 8 && len == run),
        SAFE_FRACTION => !(sound && run < 8 && len == run && w & 0xffff == u64::from(ZERO_DOT)),
        ALWAYS => true,
        _ => false,
    }
}

/// Whether the fast splitter asks [`BatchLine::rejected_fields`] to look at a value of `len`
/// bytes whose first word (zeros past the line) is `w`, for known key `id`: the look
/// [`split_padded`] computes, by [`short_value`] or [`other_value`].
fn value_look(w: u64, len: usize, id: usize) -> bool {
    match short_value(w, id) {
        Ok((_, look)) => look,
        Err((run, sound)) => long_look(
            w,
            run,
            sound,
            len,
            FAST_SAFE.get(id).copied().unwrap_or(UNCHECKED),
        ),
    }
}

/// Splits `line.text[start..]` into `key: value` fragments separated by `sep` + space (`", "`
/// or `". "`), after trimming trailing whitespace and separator characters.
///
/// A fragment is everything up to the next `sep` + space ([`fragment_of`]); its key ends at its
/// first `": "`. Both are found with [`until`] (`take_until` with `memchr` on the first byte).
fn split_fields(line: &mut BatchLine<'_>, start: usize, sep: u8) {
    let text = line.text;
    let b = text.as_bytes();
    let mut end = b.len();
    loop {
        while end > start && b[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        if end > start && b[end - 1] == sep {
            end -= 1;
            continue;
        }
        break;
    }
    if start >= end {
        return;
    }
    let mut frags = nom::combinator::iterator(&b[start..end], |i| fragment_of(i, sep));
    for f in &mut frags {
        let a = pos_in(b, f);
        let colon = match until(b": ").parse(f) {
            Ok((at, _)) => pos_in(b, at),
            Err(_) => usize::MAX,
        };
        fragment(line, a, a + f.len(), colon);
    }
}

/// One fragment of a batch body: up to (and consuming) `sep` + space (`", "`), or the non-empty
/// rest.
fn fragment_of(i: &[u8], sep: u8) -> PResult<'_, &[u8]> {
    let pair = [sep, b' '];
    alt((
        terminated(until(&pair[..]), tag(&pair[..])),
        verify(rest, |r: &[u8]| !r.is_empty()),
    ))
    .parse(i)
}

/// One fragment `b[a..z]`; `colon` is the position of its first `": "` (`usize::MAX`: none).
#[inline(always)]
fn fragment(line: &mut BatchLine<'_>, mut a: usize, mut z: usize, colon: usize) {
    let b = line.text.as_bytes();
    while a < z && b[a] == b' ' {
        a += 1;
    }
    while z > a && b[z - 1] == b' ' {
        z -= 1;
    }
    if a == z {
        return;
    }
    // the `": "` counts only when its space is inside the trimmed fragment
    if colon != usize::MAX && colon + 1 < z {
        let (mut k1, mut v0) = (colon, colon + 2);
        while k1 > a && b[k1 - 1] == b' ' {
            k1 -= 1;
        }
        while v0 < z && b[v0] == b' ' {
            v0 += 1;
        }
        if k1 > a {
            line.push(a, k1, v0, z);
            return;
        }
    } else {
        let frag = &b[a..z];
        if memchr::memchr(b'=', frag).is_some()
            && memchr::memchr(b':', frag).is_none()
            && line.len > 0
        {
            // continuation of `#token: full=N, swa=M` / `token usage: full=X, swa=Y`
            let last = &mut line.spans[usize::from(line.len) - 1];
            let lv = &b[usize::from(last.v0)..usize::from(last.v1)];
            if memchr::memchr(b'=', lv).is_some() && usize::from(last.v1) <= a {
                last.v1 = z as u16;
                return;
            }
        }
    }
    line.broken = line.broken.saturating_add(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_token_form() {
        let l = parse_standard("Decode batch. #running-req: 17, #token: full=52010, swa=31020, token usage: full=0.43, swa=0.32, cuda graph: True, gen throughput (token/s): 1203.55, #queue-req: 0").unwrap();
        assert_eq!(l.get("#token"), Some("full=52010, swa=31020"));
        assert_eq!(l.num_token(), Some(52010));
        assert_eq!(l.num_swa_token(), Some(31020));
        assert_eq!(l.token_usage(), Some(0.43));
        assert_eq!(l.swa_token_usage(), Some(0.32));
        assert_eq!(l.broken_fields(), 0);
        assert_eq!(l.graph_device(), Some("cuda"));
    }

    /// A line with a column cut out of its middle (real-3/021, an Ascend log passed through a
    /// terminal that truncated columns): a merged key is read as the known key whose tail it
    /// ends with, only on a damaged line and only when one known key has that tail.
    #[test]
    fn a_key_merged_by_a_cut_column_is_read_as_its_tail() {
        let prefill = "Prefill batch, #new-seq: 1, #new-token: 896, #cached-tounning-req: 46, #queue-req: 80, #pending-token: 69308, npu graph: False, input th";
        let l = parse_standard(prefill).unwrap();
        assert!(l.broken_fields() > 0);
        assert_eq!(l.running_req(), Some(46));
        assert_eq!(l.queue_req(), Some(80));
        assert_eq!(l.new_seq(), Some(1));
        let decode = "Decode batch, #running-req: 45, #token: 44672, token usaccept rate: 0.32, npu graph: False, gen throughput (token/s): 863.65, #queue-r";
        let l = parse_standard(decode).unwrap();
        assert_eq!(l.accept_rate(), Some(0.32));
        // the head of `token usage` is left over: its value is not the usage
        assert_eq!(l.token_usage(), None);
        assert_eq!(l.running_req(), Some(45));
        // the same fields on an undamaged line: a key of a newer SGLang that ends like a
        // known one is not taken for it
        let whole = "Decode batch, #running-req: 45, #token: 44672, token usaccept rate: 0.32, npu graph: False, gen throughput (token/s): 863.65";
        assert_eq!(parse_standard(whole).unwrap().accept_rate(), None);
        // a tail shared by several keys (`token usage`, `swa token usage`, ...) names none;
        // a tail of under MIN_CUT_TAIL bytes neither
        let shared =
            "Decode batch, #running-req: 45, #tokoken usage: 0.5, #cached-toeue-req: 3, #queue-r";
        let l = parse_standard(shared).unwrap();
        assert_eq!((l.token_usage(), l.swa_token_usage()), (None, None));
        assert_eq!(l.queue_req(), None);
        // a known key already on the line keeps its own field
        let twice =
            "Prefill batch, #new-seq: 1, #running-req: 7, #cached-tounning-req: 46, input th";
        assert_eq!(parse_standard(twice).unwrap().running_req(), Some(7));
    }

    /// The graph flag is the first `<word> graph` field of the line, known device or not.
    #[test]
    fn graph_flag_is_the_first_graph_field() {
        let flag = |text: &str| {
            let l = parse_standard(text).unwrap();
            (l.graph_device().map(str::to_string), l.graph())
        };
        let head = "Decode batch. #running-req: 3, #token: 900, token usage: 0.01, ";
        assert_eq!(
            flag(&format!(
                "{head}xpu graph: True, cuda graph: False, #queue-req: 0"
            )),
            (Some("xpu".to_string()), Some(true))
        );
        assert_eq!(
            flag(&format!(
                "{head}cuda graph: False, xpu graph: True, #queue-req: 0"
            )),
            (Some("cuda".to_string()), Some(false))
        );
        assert_eq!(
            flag(&format!(
                "{head}npu graph: True, cpu graph: False, #queue-req: 0"
            )),
            (Some("npu".to_string()), Some(true))
        );
        assert_eq!(
            flag(&format!("{head}hpu graph: False, #queue-req: 0")),
            (Some("hpu".to_string()), Some(false))
        );
        // not a device word: no flag
        assert_eq!(
            flag(&format!("{head}cuda-x graph: True, #queue-req: 0")),
            (None, None)
        );
        assert_eq!(flag(&format!("{head}#queue-req: 0")), (None, None));
    }

    /// The fuzz input `crash-f3e3…` (fuzz/seeds/parse_line): two decode heads in one line and
    /// NUL bytes in a value. The field `t#queue-req` is a joined key read as `#queue-req` (its
    /// tail): its value is set aside and reported under the key as printed.
    #[test]
    fn a_joined_key_is_rejected_under_its_printed_name() {
        let line = b"[2025-07-10 08:01:02 TP0] Decode batch. #running-req: 17,Decode batch. 58010, swa=31020, token usage: full=0.43, swa=0.32, cuda graph: True, gen throughput (token/stch. #running-req: 17, #token: full=58010, swa=31020, t#queue-req:  #queu\0\0\0\0\0\0\0e-req: 0";
        let r = crate::parse_line(line, 1);
        let Event::Batch(b) = r.event else {
            panic!("{:?}", r.event)
        };
        let rejected: Vec<_> = b.rejected_fields().map(|r| (r.key, r.reason)).collect();
        assert_eq!(
            rejected,
            [
                ("#running-req", Rejection::NotANumber),
                ("t#queue-req", Rejection::NotANumber)
            ]
        );
        assert_eq!(b.get("#queue-req"), Some("#queu\0\0\0\0\0\0\0e-req: 0"));
        assert_eq!(b.queue_req(), None);
    }

    #[test]
    fn key_ids_are_exact() {
        for (i, k) in KNOWN_KEYS.iter().enumerate() {
            assert_eq!(key_id(k.as_bytes()), Some(i), "{k}");
            assert_eq!(fingerprint_rt(k.as_bytes()), fingerprint(k.as_bytes()));
            // one byte changed anywhere, one byte more or less: not a known key
            for j in 0..k.len() {
                let mut m = k.as_bytes().to_vec();
                m[j] ^= 0x20;
                assert_ne!(key_id(&m), Some(i), "{k} / {j}");
            }
            assert_eq!(
                key_id(&k.as_bytes()[1..])
                    .map(|x| KNOWN_KEYS[x])
                    .filter(|x| x.len() != k.len() - 1),
                None
            );
            let mut longer = k.as_bytes().to_vec();
            longer.push(b'x');
            assert_eq!(key_id(&longer), None);
        }
        assert_eq!(key_id(b""), None);
        assert_eq!(key_id(b"#running-req "), None);
        assert_eq!(key_id(b"est. decode TFLOPS/s (per GPX)"), None);
        assert_eq!(key_id(b"est. decode TFLOPX/s (per GPU)"), None);
    }

    #[test]
    fn errors() {
        assert!(parse_standard("Decode batches are great").is_err());
        assert!(parse_standard("Decode batch").is_err());
        assert!(parse_standard("Decode batch. nothing here").is_err());
    }
}

impl<'a> BatchLine<'a> {
    /// The graph flag as a diagnosis keeps it, with one look: whether the batch ran as a
    /// captured graph (the value of [`BatchLine::graph_flag`], also [`BatchLine::graph`]) and
    /// whether the flag's device is `npu` (an Ascend build). `(None, false)` without a flag.
    ///
    /// When every field's key is known and none repeats (the usual line), no `<word> graph` of
    /// an unknown device can come before a known graph key, so the flag is the known graph key
    /// with the least slot and its device is the key's word: four slot loads, no key text
    /// compared (`graph_flag` costs ~130 instructions a line). Any other line is read by
    /// [`BatchLine::graph_flag`] itself.
    pub fn graph_on_npu(&self) -> (Option<bool>, bool) {
        const CUDA: usize = kid("cuda graph");
        const CPU: usize = kid("cpu graph");
        const NPU: usize = kid("npu graph");
        const MUSA: usize = kid("musa graph");
        if self.known != self.len {
            let flag = self.graph_flag();
            return (
                flag.and_then(|(_, on)| on),
                flag.is_some_and(|(device, _)| device == "npu"),
            );
        }
        // the least slot of the four (an absent key's 0 wraps to 255, above any slot)
        let slot = |id: usize| self.slot.get(id).map_or(u8::MAX, |s| s.wrapping_sub(1));
        let (cuda, cpu, npu, musa) = (slot(CUDA), slot(CPU), slot(NPU), slot(MUSA));
        let least = cuda.min(cpu).min(npu).min(musa);
        if least == u8::MAX {
            return (None, false);
        }
        let on = self
            .spans
            .get(usize::from(least))
            .and_then(|s| {
                self.text
                    .as_bytes()
                    .get(usize::from(s.v0)..usize::from(s.v1))
            })
            .and_then(parse_bool);
        (on, npu == least)
    }
}

#[cfg(test)]
mod graph_on_npu_tests {
    use super::*;

    /// What `graph_on_npu` must equal: `graph_flag`'s value and device.
    fn by_flag(b: &BatchLine<'_>) -> (Option<bool>, bool) {
        let flag = b.graph_flag();
        (
            flag.and_then(|(_, on)| on),
            flag.is_some_and(|(device, _)| device == "npu"),
        )
    }

    #[test]
    fn equals_graph_flag() {
        let lines = [
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.01, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.01, npu graph: False, gen throughput (token/s): 1.00, #queue-req: 0",
            "Decode batch. #running-req: 4, npu graph: True, cuda graph: False, #queue-req: 0",
            "Decode batch. #running-req: 4, cpu graph: maybe, #queue-req: 0",
            "Decode batch. #running-req: 4, musa graph: True, #queue-req: 0",
            "Decode batch. #running-req: 4, #queue-req: 0",
            "Decode batch. #running-req: 4, xpu graph: True, npu graph: False, #queue-req: 0",
            "Decode batch. #running-req: 4, npu graph: True, xpu graph: False, #queue-req: 0",
            "Decode batch. #running-req: 4, #new thing: 3, npu graph: True, #queue-req: 0",
            "Decode batch. #running-req: 4, cuda graph: True, cuda graph: False, #queue-req: 0",
            "Decode batch. #running-req: 4, cuda graph: False, npu graph: True, #queue-req: 0",
            "Prefill batch. #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, cuda graph: True",
            "Prefill batch(mixed #running-req: 3). #new-seq: 1, npu graph: True",
            "Decode batch. #running-req: 4, npu graph: True,, #queue-req: 0",
        ];
        for text in lines {
            for fast in [true, false] {
                let mut ev = Event::Other;
                parse_standard_into(text, &mut ev, &mut KeyOrder::new(fast));
                let Event::Batch(b) = ev else {
                    panic!("{text}: {ev:?}");
                };
                assert_eq!(b.graph_on_npu(), by_flag(&b), "{text}");
                assert_eq!(b.graph_on_npu().0, b.graph(), "{text}");
            }
        }
    }
}
