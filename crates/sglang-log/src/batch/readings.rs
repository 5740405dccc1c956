//! The readings of the usual batch line in one pass ([`BatchLine::usual_decode`],
//! [`BatchLine::usual_prefill`]): the line SGLang prints, of the strict form and of the usual
//! keys only, read with one word load and one word-wise parse a value, each value as its
//! accessor reads it.
//!
//! A line read by a layout (`layout.rs`) carries its layout's [`UsualPlan`]: where each
//! reading's value ends and how long it is, the same on every line of the layout (the digits
//! do not move), so the one pass loads each value's word straight from the plan, without the
//! key slot, span and bounds look-ups or the count of the keys.

use super::layout::has_avx2;
use super::{BatchKind, BatchLine, admits_f64, kid};
use crate::num::{
    bool_of_tail, digit_bytes, hundredths_of_digit_tail, hundredths_of_tail, u64_of_digit_tail,
    u64_of_tail,
};

/// The readings of a `Decode batch` line of the usual keys only ([`BatchLine::usual_decode`]),
/// each equal to its accessor's. The graph flag of such a line is `cuda graph`'s, so its
/// device is never `npu`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DecodeReadings {
    /// [`BatchLine::running_req`] (requests).
    pub running: Option<u64>,
    /// [`BatchLine::queue_req`] (requests).
    pub queue: Option<u64>,
    /// [`BatchLine::num_token`] (tokens).
    pub tokens: Option<u64>,
    /// [`BatchLine::token_usage`] (fraction 0–1).
    pub usage: Option<f64>,
    /// [`BatchLine::gen_throughput`] (tokens/s).
    pub gen_tps: Option<f64>,
    /// [`BatchLine::graph`].
    pub graph: Option<bool>,
    /// [`BatchLine::accept_len`] (tokens/step).
    pub accept_len: Option<f64>,
}

/// The readings of a `Prefill batch` line of the usual keys only
/// ([`BatchLine::usual_prefill`]), each equal to its accessor's. The graph flag of such a
/// line is `cuda graph`'s.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PrefillReadings {
    /// [`BatchLine::new_seq`] (requests).
    pub new_seq: Option<u64>,
    /// [`BatchLine::new_token`] (tokens).
    pub new_token: Option<u64>,
    /// [`BatchLine::cached_token`] (tokens).
    pub cached_token: Option<u64>,
    /// [`BatchLine::running_req`] (requests).
    pub running: Option<u64>,
    /// [`BatchLine::queue_req`] (requests).
    pub queue: Option<u64>,
    /// [`BatchLine::token_usage`] (fraction 0–1).
    pub usage: Option<f64>,
    /// [`BatchLine::input_throughput`] (tokens/s).
    pub input_tps: Option<f64>,
    /// [`BatchLine::graph`].
    pub graph: Option<bool>,
}

const RUNNING: usize = kid("#running-req");
const QUEUE: usize = kid("#queue-req");
const TOKEN: usize = kid("#token");
const USAGE: usize = kid("token usage");
const GEN: usize = kid("gen throughput (token/s)");
const CUDA_GRAPH: usize = kid("cuda graph");
const ACCEPT_LEN: usize = kid("accept len");
const NEW_SEQ: usize = kid("#new-seq");
const NEW_TOKEN: usize = kid("#new-token");
const CACHED_TOKEN: usize = kid("#cached-token");
const PENDING_TOKEN: usize = kid("#pending-token");
const INPUT: usize = kid("input throughput (token/s)");

/// The keys a usual `Decode batch` line prints: [`DecodeReadings`]' own, in the order of
/// [`UsualPlan`]'s readings.
const DECODE_KEYS: [usize; 7] = [RUNNING, QUEUE, TOKEN, USAGE, GEN, CUDA_GRAPH, ACCEPT_LEN];
/// [`PrefillReadings`]' keys, in the order of [`UsualPlan`]'s readings (`#pending-token` is a
/// key the line may print, not a reading).
const PREFILL_KEYS: [usize; 8] = [
    NEW_SEQ,
    NEW_TOKEN,
    CACHED_TOKEN,
    RUNNING,
    QUEUE,
    USAGE,
    INPUT,
    CUDA_GRAPH,
];
/// The keys of a prefill line's readings whose check bit must be clear for the one pass (a
/// rate of 10^4 tok/s or more is looked at: checked as its accessor checks it).
const PREFILL_SOUND: [usize; 6] = [NEW_SEQ, NEW_TOKEN, CACHED_TOKEN, USAGE, RUNNING, QUEUE];

/// [`UsualPlan::kind`]: no plan, a decode line's, a prefill line's.
const PLAN_NONE: u8 = 0;
const PLAN_DECODE: u8 = 1;
const PLAN_PREFILL: u8 = 2;
/// [`UsualPlan::mode`]: every count and `%.2f` reading of the line the plan was made of is of
/// its plain form (ASCII digits; `d.dd` to `ddddd.dd`), so that of every line of its layout
/// too (digits in the same bytes, the other bytes equal): the one pass reads them without
/// checks ([`u64_of_digit_tail`], [`hundredths_of_digit_tail`]).
const SURE: u8 = 4;
/// [`UsualPlan::mode`]: [`SURE`], and the CPU runs AVX2: the counts and `%.2f` readings are
/// read all at once ([`wide_values`]), the graph flag is the plan's.
const WIDE: u8 = 8;

/// Where the readings of a usual batch line lie ([`BatchLine::usual_decode`],
/// [`BatchLine::usual_prefill`]), made once per layout ([`UsualPlan::of`]) and carried by
/// every record the layout gives: for reading `i` (the order of `DECODE_KEYS` or
/// `PREFILL_KEYS`), the offset in the line's text (bytes) of the 8 bytes that end its value
/// and the value's length (1 to 8 bytes; 0: the key has no field). A plan is made only for a
/// line of the strict form whose every field is the first of a reading's key (or
/// `#pending-token` on a prefill line), each value 1 to 8 bytes long and ending at byte 8 or
/// later: the one pass then needs from the line only its check bits and its values' words.
/// The general path leaves the plan off ([`UsualPlan::NONE`]) and the one pass finds the
/// values by the key slots; both read the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UsualPlan {
    /// [`PLAN_NONE`], [`PLAN_DECODE`] or [`PLAN_PREFILL`] (bits 0-1, [`UsualPlan::kind`]),
    /// [`SURE`] and [`WIDE`], and the graph flag's reading (bits 4-5, [`UsualPlan::graph`]:
    /// 0 `None`, 1 `False`, 2 `True`; a value that [`bool_of_tail`] reads holds no digit,
    /// so it is the same on every line of the layout, only digits differ, and one that holds
    /// a digit reads `None` on every line). One byte: a plan is copied into every record a
    /// layout gives.
    mode: u8,
    /// Offset (bytes) in the text of the 8 bytes that end reading `i`'s value.
    at: [u8; 8],
    /// Length (bytes) of reading `i`'s value, 0 when absent.
    len: [u8; 8],
    /// Bytes of the text the readings' words reach (the largest `at + 8`, 8 at least): a
    /// line at least this long holds every word the wide read loads.
    end: u8,
}

impl UsualPlan {
    /// No plan: the one pass finds the values by the key slots.
    pub(crate) const NONE: UsualPlan = UsualPlan {
        mode: PLAN_NONE,
        at: [0; 8],
        len: [0; 8],
        end: 8,
    };

    /// The plan of batch line `b` (see [`UsualPlan`]), or [`UsualPlan::NONE`] for a line that
    /// is not a usual one whatever its digits.
    pub(crate) fn of(b: &BatchLine<'_>) -> UsualPlan {
        let (kind, ids, forms): (u8, &[usize], &[Form]) = match b.kind {
            BatchKind::Decode => (PLAN_DECODE, &DECODE_KEYS, &DECODE_FORMS),
            BatchKind::Prefill => (PLAN_PREFILL, &PREFILL_KEYS, &PREFILL_FORMS),
        };
        if !b.strict {
            return UsualPlan::NONE;
        }
        let mut plan = UsualPlan {
            mode: kind,
            ..UsualPlan::NONE
        };
        let mut n = 0usize;
        for (i, &id) in ids.iter().enumerate() {
            let at = b.slot.get(id).map_or(0, |&s| usize::from(s));
            if at == 0 {
                continue;
            }
            n += 1;
            let Some(s) = b.spans.get(at - 1) else {
                return UsualPlan::NONE;
            };
            let (v0, v1) = (usize::from(s.v0), usize::from(s.v1));
            let len = v1.wrapping_sub(v0);
            if !(1..=8).contains(&len) || !(8..=b.text.len()).contains(&v1) || v1 > 255 {
                return UsualPlan::NONE;
            }
            // ok: v1 - 8 < 256 and len <= 8 (checked above)
            (plan.at[i], plan.len[i]) = ((v1 - 8) as u8, len as u8);
        }
        if kind == PLAN_PREFILL {
            n += usize::from(b.slot.get(PENDING_TOKEN).is_some_and(|&s| s != 0));
        }
        if n != usize::from(b.len) {
            return UsualPlan::NONE;
        }
        let sure = forms.iter().enumerate().all(|(i, form)| {
            let (at, len) = (usize::from(plan.at[i]), u32::from(plan.len[i]));
            if len == 0 || matches!(form, Form::Flag) {
                // absent, or a flag (read with its check)
                return true;
            }
            let Some(tail) = b.text.as_bytes().get(at..at + 8) else {
                return false;
            };
            let tail = u64::from_le_bytes(tail.try_into().unwrap_or_default());
            // the value's bytes (bit 7 of each), the digits among them
            let value = 0x8080_8080_8080_8080u64
                .checked_shl(64 - 8 * len)
                .unwrap_or(0);
            let digits = digit_bytes(tail) & value;
            match form {
                // as `u64_of_tail` reads it: digits only
                Form::Count => digits == value,
                // as `hundredths_of_tail`: 4 to 8 bytes, digits around a `.` at byte 5
                _ => len >= 4 && (tail >> 40) as u8 == b'.' && digits == value & !(0x80 << 40),
            }
        });
        // the flag as `flag_of` reads it (no field, or a value of another form: `None`)
        let flag = ids.iter().position(|&id| id == CUDA_GRAPH).and_then(|i| {
            let len = usize::from(plan.len[i]);
            if len == 0 {
                return Some(0);
            }
            let at = usize::from(plan.at[i]);
            let tail = b.text.as_bytes().get(at..at + 8)?;
            let tail = u64::from_le_bytes(tail.try_into().ok()?);
            Some(bool_of_tail(tail, len).map_or(0, |on| 1 + u8::from(on)))
        });
        if sure {
            plan.mode |= SURE;
            if let Some(flag) = flag {
                plan.mode |= flag << 4 | if has_avx2() { WIDE } else { 0 };
            }
        }
        plan.end = plan
            .at
            .iter()
            .map(|&at| at.saturating_add(8))
            .max()
            .unwrap_or(8);
        plan
    }
}

impl UsualPlan {
    /// The graph flag of every line of the plan's layout ([`UsualPlan::flag`]).
    #[inline(always)]
    fn graph(&self) -> Option<bool> {
        let flag = self.mode >> 4 & 3;
        (flag != 0).then_some(flag == 2)
    }

    /// [`PLAN_NONE`], [`PLAN_DECODE`] or [`PLAN_PREFILL`].
    #[inline(always)]
    fn kind(&self) -> u8 {
        self.mode & 3
    }

    /// Whether the counts and `%.2f` readings are of their plain forms ([`SURE`]).
    #[inline(always)]
    fn sure(&self) -> bool {
        self.mode & SURE != 0
    }
}

/// How the one pass reads a reading's value: as a count, a `%.2f` figure or a flag.
#[derive(Clone, Copy)]
enum Form {
    Count,
    Hundredths,
    Flag,
}

/// The forms of [`DECODE_KEYS`]' and [`PREFILL_KEYS`]' readings, in their order.
const DECODE_FORMS: [Form; 7] = [
    Form::Count,
    Form::Count,
    Form::Count,
    Form::Hundredths,
    Form::Hundredths,
    Form::Flag,
    Form::Hundredths,
];
const PREFILL_FORMS: [Form; 8] = [
    Form::Count,
    Form::Count,
    Form::Count,
    Form::Count,
    Form::Count,
    Form::Hundredths,
    Form::Hundredths,
    Form::Flag,
];

/// The pick and threshold vectors of [`wide_values`] for readings of `forms` (in lane order,
/// a missing lane none): for lane `i` (byte `j` of its 8) the byte of its word that goes
/// there (`pshufb` counts from its 128-bit half), and the length the value must exceed for
/// the byte to be a digit (else it is zeroed). A count's digits are the word's last `len`
/// bytes; a `%.2f` reading's the last `len - 1` once the `.` (the word's byte 5) is taken
/// out, the bytes before it moved up one, as [`hundredths_of_digit_tail`] does; a flag's lane
/// is left zero.
const fn wide_forms(forms: &[Form]) -> [[u8; 32]; 4] {
    let mut t = [[0u8; 32]; 4];
    let mut i = 0;
    while i < 8 {
        let mut j = 0;
        while j < 8 {
            // lane i: half i / 4 of the eight, byte 8 * (i % 4) + j of its vector, byte
            // 8 * (i % 2) + j of its 128-bit half
            let (v, at) = (i / 4, 8 * (i % 4) + j);
            let base = (8 * (i % 2)) as u8;
            let (pick, above) = if i < forms.len() {
                match forms[i] {
                    Form::Count => (j as u8, 7 - j as u8),
                    Form::Hundredths if j >= 6 => (j as u8, 8 - j as u8),
                    Form::Hundredths if j >= 1 => (j as u8 - 1, 8 - j as u8),
                    _ => (0, 127),
                }
            } else {
                (0, 127)
            };
            t[v][at] = base + pick;
            t[2 + v][at] = above;
            j += 1;
        }
        i += 1;
    }
    t
}

/// [`wide_forms`] of a decode and of a prefill line's readings.
const WIDE_DECODE: [[u8; 32]; 4] = wide_forms(&DECODE_FORMS);
const WIDE_PREFILL: [[u8; 32]; 4] = wide_forms(&PREFILL_FORMS);

/// The picks that put byte `i` of a word broadcast to every 64-bit lane in the low byte of
/// lane `i` (zeros above it: the gather's offset), and in every byte of lane `i` (the length
/// compared with the thresholds), for the eight lanes in two vectors.
const fn lane_bytes(every: bool) -> [[u8; 32]; 2] {
    let mut t = [[0x80u8; 32]; 2];
    let mut i = 0;
    while i < 8 {
        let mut j = 0;
        while j < 8 {
            if every || j == 0 {
                t[i / 4][8 * (i % 4) + j] = i as u8;
            }
            j += 1;
        }
        i += 1;
    }
    t
}
const AT_BYTES: [[u8; 32]; 2] = lane_bytes(false);
const LEN_BYTES: [[u8; 32]; 2] = lane_bytes(true);

/// The values of a wide plan's readings (see [`WIDE`]), lane `i` reading `i`'s:
/// a count as [`u64_of_digit_tail`] reads it, a `%.2f` reading as the integer of its digits
/// ([`hundredths_of_digit_tail`] before its division by 100), a flag or missing reading 0.
/// The eight words are gathered from `text` at the plan's offsets, each value's digits
/// picked (right-aligned, the `.` taken out, zeros in front) by one byte shuffle per four,
/// and the digits combined in pairs, fours and eights by multiply-adds: some 30 vector
/// instructions for the line, where a word-wise parse of each value took 25 to 30 scalar
/// ones each.
///
/// # Safety
/// The CPU must run AVX2, and `text` must hold at least `max(at[i]) + 8` bytes (the plan's
/// `end`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn wide_values(text: &[u8], at: u64, len: u64, forms: &[[u8; 32]; 4]) -> [u64; 8] {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_andnot_si256, _mm256_cmpgt_epi8, _mm256_i64gather_epi64,
        _mm256_loadu_si256, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_mul_epu32,
        _mm256_or_si256, _mm256_set1_epi8, _mm256_set1_epi16, _mm256_set1_epi32,
        _mm256_set1_epi64x, _mm256_shuffle_epi8, _mm256_srli_epi64, _mm256_storeu_si256,
        _mm256_subs_epu8,
    };
    debug_assert!(text.len() >= 8);
    let load = |b: &[u8; 32]| {
        // SAFETY: `b` holds 32 bytes; an unaligned load.
        unsafe { _mm256_loadu_si256(b.as_ptr() as *const __m256i) }
    };
    let (at, len) = (
        _mm256_set1_epi64x(at as i64),
        _mm256_set1_epi64x(len as i64),
    );
    let (high, zero) = (_mm256_set1_epi8(-128), _mm256_set1_epi8(b'0' as i8));
    // (10, 1) on the byte pairs, (100, 1) on the pairs of pairs
    let (tens, hundreds) = (_mm256_set1_epi16(0x010a), _mm256_set1_epi32(0x0001_0064));
    let mut out = [0u64; 8];
    for h in 0..2 {
        let offsets = _mm256_shuffle_epi8(at, load(&AT_BYTES[h]));
        let lens = _mm256_shuffle_epi8(len, load(&LEN_BYTES[h]));
        let digit = _mm256_cmpgt_epi8(lens, load(&forms[2 + h]));
        let pick = _mm256_or_si256(load(&forms[h]), _mm256_andnot_si256(digit, high));
        // SAFETY: each lane's offset is one of the plan's `at` (0 to 247), and the text
        // holds `at + 8` bytes for every one of them (the caller's contract): each gathered
        // word lies in the text.
        let words = unsafe { _mm256_i64gather_epi64::<1>(text.as_ptr() as *const i64, offsets) };
        // the digits' values (a zeroed byte stays 0)
        let d = _mm256_subs_epu8(_mm256_shuffle_epi8(words, pick), zero);
        let pairs = _mm256_maddubs_epi16(d, tens);
        let fours = _mm256_madd_epi16(pairs, hundreds);
        let eights = _mm256_add_epi64(
            _mm256_mul_epu32(fours, _mm256_set1_epi64x(10_000)),
            _mm256_srli_epi64::<32>(fours),
        );
        // SAFETY: `out[4 * h..]` holds 32 bytes (h < 2).
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(4 * h) as *mut __m256i, eights) };
    }
    out
}

/// A reading's value (the 8 bytes that end it and its length; `None`: the key has no field)
/// as a count; `None`: not read in one pass.
#[inline(always)]
fn count_of(v: Option<(u64, usize)>) -> Option<Option<u64>> {
    match v {
        None => Some(None),
        Some((tail, len)) => u64_of_tail(tail, len).map(Some),
    }
}

/// [`count_of`] for a `%.2f` rate or fraction.
#[inline(always)]
fn hundredths_of(v: Option<(u64, usize)>) -> Option<Option<f64>> {
    match v {
        None => Some(None),
        Some((tail, len)) => hundredths_of_tail(tail, len).map(Some),
    }
}

/// [`count_of`] for the graph flag.
#[inline(always)]
fn flag_of(v: Option<(u64, usize)>) -> Option<Option<bool>> {
    match v {
        None => Some(None),
        Some((tail, len)) => Some(bool_of_tail(tail, len)),
    }
}

impl<'a> BatchLine<'a> {
    /// Whether the line is of the strict form (split by the fast splitter: no value has
    /// `name=` parts) and no value of the keys `ids` is to be looked at (no `check` bit set,
    /// see [`BatchLine::sound`]). On such a line whose every field is the first field of one
    /// of the keys a reading reads (as many of them present as fields), no other key has a
    /// field, and a reading is its accessor's with no stand-in key (`#running_req`,
    /// `#full token`, …) and no part; one of `ids` needs no range check: the value as it
    /// parses.
    #[inline(always)]
    fn strict_and_sound<const N: usize>(&self, ids: &[usize; N]) -> bool {
        // (`ids` are constants once inlined: `bits` is one)
        let mut bits = 0u64;
        for &id in ids {
            bits |= 1 << (id % 64);
        }
        self.strict && self.check & bits == 0
    }

    /// The value of the first field of known key `id` as the 8 bytes that end it and its
    /// length (see `num::right_aligned_tail`), `present` counted up when the key has a field:
    /// `Some(None)` without a field of the key, `None` for a value that ends within the
    /// line's first 8 bytes.
    #[inline(always)]
    fn tail_of(&self, id: usize, present: &mut u8) -> Option<Option<(u64, usize)>> {
        let at = usize::from(*self.slot.get(id)?);
        if at == 0 {
            return Some(None);
        }
        *present += 1;
        let s = self.spans.get(at - 1)?;
        let (v0, v1) = (usize::from(s.v0), usize::from(s.v1));
        let tail = self.text.as_bytes().get(..v1)?.last_chunk::<8>()?;
        Some(Some((u64::from_le_bytes(*tail), v1.wrapping_sub(v0))))
    }

    /// Reading `i`'s value by the line's [`UsualPlan`] (see [`BatchLine::tail_of`]).
    #[inline(always)]
    fn planned(&self, i: usize) -> Option<Option<(u64, usize)>> {
        let len = usize::from(*self.plan.len.get(i)?);
        if len == 0 {
            return Some(None);
        }
        let at = usize::from(*self.plan.at.get(i)?);
        // one compare: `at + 8` does not overflow (`at` is a byte)
        let tail: [u8; 8] = self.text.as_bytes().get(at..at + 8)?.try_into().ok()?;
        Some(Some((u64::from_le_bytes(tail), len)))
    }

    /// The values of the readings by a wide plan ([`wide_values`] with the picks `forms` of
    /// the plan's kind), `None` without one or for a text shorter than the plan reaches.
    #[inline(always)]
    fn wide(&self, forms: &[[u8; 32]; 4]) -> Option<[u64; 8]> {
        #[cfg(target_arch = "x86_64")]
        if self.plan.mode & WIDE != 0 && self.text.len() >= usize::from(self.plan.end) {
            let (at, len) = (
                u64::from_le_bytes(self.plan.at),
                u64::from_le_bytes(self.plan.len),
            );
            // SAFETY: a plan is wide only when the CPU runs AVX2 (`UsualPlan::of`), and the
            // text holds `end` = the largest `at + 8` bytes (checked just above).
            return Some(unsafe { wide_values(self.text.as_bytes(), at, len, forms) });
        }
        let _ = forms;
        None
    }

    /// Reading `i` of a wide read's values `v` as a `%.2f` figure: the integer of its digits
    /// over 100, as [`hundredths_of_digit_tail`] divides it (converted from an `i64`, one
    /// instruction where a `u64`'s takes several: the value is below 10^8).
    #[inline(always)]
    fn wide_hundredths(&self, v: &[u64; 8], i: usize) -> Option<f64> {
        (self.plan.len[i] != 0).then(|| v[i] as i64 as f64 / 100.0)
    }

    /// The readings of a decode line of the keys of [`BatchLine::strict_and_sound`], each
    /// value from `tail` (by reading index and key, as [`BatchLine::tail_of`] gives it).
    #[inline(always)]
    fn decode_by(
        &self,
        mut tail: impl FnMut(usize, usize) -> Option<Option<(u64, usize)>>,
    ) -> Option<DecodeReadings> {
        Some(DecodeReadings {
            running: count_of(tail(0, RUNNING)?)?,
            queue: count_of(tail(1, QUEUE)?)?,
            tokens: count_of(tail(2, TOKEN)?)?,
            usage: hundredths_of(tail(3, USAGE)?)?,
            gen_tps: hundredths_of(tail(4, GEN)?)?,
            graph: flag_of(tail(5, CUDA_GRAPH)?)?,
            accept_len: hundredths_of(tail(6, ACCEPT_LEN)?)?,
        })
    }

    /// [`BatchLine::decode_by`] of a prefill line.
    #[inline(always)]
    fn prefill_by(
        &self,
        mut tail: impl FnMut(usize, usize) -> Option<Option<(u64, usize)>>,
    ) -> Option<PrefillReadings> {
        Some(PrefillReadings {
            new_seq: count_of(tail(0, NEW_SEQ)?)?,
            new_token: count_of(tail(1, NEW_TOKEN)?)?,
            cached_token: count_of(tail(2, CACHED_TOKEN)?)?,
            running: count_of(tail(3, RUNNING)?)?,
            queue: count_of(tail(4, QUEUE)?)?,
            usage: hundredths_of(tail(5, USAGE)?)?,
            input_tps: hundredths_of(tail(6, INPUT)?)?
                .filter(|&x| self.sound(INPUT) || admits_f64(INPUT, x)),
            graph: flag_of(tail(7, CUDA_GRAPH)?)?,
        })
    }

    /// The readings of a `Decode batch` line whose every field is of the usual keys
    /// (`#running-req`, `#queue-req`, `#token`, `token usage`, `gen throughput (token/s)`,
    /// `cuda graph`, `accept len`; none twice), of the strict form and sound on sight, in one
    /// pass: each equal to its accessor's, and every other accessor's reading `None` (no
    /// other key has a field). `None` for any other line, and for a line with a value of
    /// another form than SGLang prints (more than 8 bytes, a count that is not digits, a rate
    /// or fraction that is not `%.2f`): read it with the accessors.
    ///
    /// A line whose layout's plan is wide (its values read all at once with AVX2) is read
    /// here, inlined into the caller (its readings go straight to where the caller keeps them:
    /// through a returned struct and a call they were copied twice, ~40 instructions); any
    /// other out of line, each value by its word.
    #[inline(always)]
    pub fn usual_decode(&self) -> Option<DecodeReadings> {
        if self.plan.mode & (3 | WIDE) == PLAN_DECODE | WIDE
            && self.strict_and_sound(&DECODE_KEYS)
            && let Some(v) = self.wide(&WIDE_DECODE)
        {
            let count = |i: usize| (self.plan.len[i] != 0).then_some(v[i]);
            return Some(DecodeReadings {
                running: count(0),
                queue: count(1),
                tokens: count(2),
                usage: self.wide_hundredths(&v, 3),
                gen_tps: self.wide_hundredths(&v, 4),
                graph: self.plan.graph(),
                accept_len: self.wide_hundredths(&v, 6),
            });
        }
        self.usual_decode_by_words()
    }

    /// [`BatchLine::usual_decode`] of a line without a wide plan: each value by its word.
    #[inline(never)]
    fn usual_decode_by_words(&self) -> Option<DecodeReadings> {
        if !self.strict_and_sound(&DECODE_KEYS) {
            return None;
        }
        if self.plan.kind() == PLAN_DECODE {
            if self.plan.sure() {
                let count = |i| Some(self.planned(i)?.map(|(t, n)| u64_of_digit_tail(t, n)));
                let hundredths = |i| {
                    Some(
                        self.planned(i)?
                            .map(|(t, n)| hundredths_of_digit_tail(t, n)),
                    )
                };
                return Some(DecodeReadings {
                    running: count(0)?,
                    queue: count(1)?,
                    tokens: count(2)?,
                    usage: hundredths(3)?,
                    gen_tps: hundredths(4)?,
                    graph: flag_of(self.planned(5)?)?,
                    accept_len: hundredths(6)?,
                });
            }
            return self.decode_by(|i, _| self.planned(i));
        }
        let mut n = 0u8;
        let r = self.decode_by(|_, id| self.tail_of(id, &mut n))?;
        (n == self.len).then_some(r)
    }

    /// The readings of a `Prefill batch` line whose every field is of the usual keys
    /// (`#new-seq`, `#new-token`, `#cached-token`, `token usage`, `#running-req`,
    /// `#queue-req`, `#pending-token`, `input throughput (token/s)`, `cuda graph`), in one
    /// pass, as [`BatchLine::usual_decode`] reads a decode line. `None` for any other line.
    #[inline(always)]
    pub fn usual_prefill(&self) -> Option<PrefillReadings> {
        if self.plan.mode & (3 | WIDE) == PLAN_PREFILL | WIDE
            && self.strict_and_sound(&PREFILL_SOUND)
            && let Some(v) = self.wide(&WIDE_PREFILL)
        {
            let count = |i: usize| (self.plan.len[i] != 0).then_some(v[i]);
            return Some(PrefillReadings {
                new_seq: count(0),
                new_token: count(1),
                cached_token: count(2),
                running: count(3),
                queue: count(4),
                usage: self.wide_hundredths(&v, 5),
                input_tps: self
                    .wide_hundredths(&v, 6)
                    .filter(|&x| self.sound(INPUT) || admits_f64(INPUT, x)),
                graph: self.plan.graph(),
            });
        }
        self.usual_prefill_by_words()
    }

    /// [`BatchLine::usual_prefill`] of a line without a wide plan: each value by its word.
    #[inline(never)]
    fn usual_prefill_by_words(&self) -> Option<PrefillReadings> {
        if !self.strict_and_sound(&PREFILL_SOUND) {
            return None;
        }
        if self.plan.kind() == PLAN_PREFILL {
            if self.plan.sure() {
                let count = |i| Some(self.planned(i)?.map(|(t, n)| u64_of_digit_tail(t, n)));
                let hundredths = |i| {
                    Some(
                        self.planned(i)?
                            .map(|(t, n)| hundredths_of_digit_tail(t, n)),
                    )
                };
                return Some(PrefillReadings {
                    new_seq: count(0)?,
                    new_token: count(1)?,
                    cached_token: count(2)?,
                    running: count(3)?,
                    queue: count(4)?,
                    usage: hundredths(5)?,
                    input_tps: hundredths(6)?
                        .filter(|&x| self.sound(INPUT) || admits_f64(INPUT, x)),
                    graph: flag_of(self.planned(7)?)?,
                });
            }
            return self.prefill_by(|i, _| self.planned(i));
        }
        let mut n = 0u8;
        // `#pending-token` is no reading, only a key the line may print
        let pending = usize::from(self.slot.get(PENDING_TOKEN).is_some_and(|&s| s != 0));
        let r = self.prefill_by(|_, id| self.tail_of(id, &mut n))?;
        (usize::from(n) + pending == usize::from(self.len)).then_some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{KeyOrder, parse_standard_into};
    use super::*;
    use crate::Event;
    use crate::grammar_check::{decode_by_accessors, prefill_by_accessors};

    /// The one-pass readings of `text` by both splitters, against the accessors; whether
    /// the fast splitter's line was read in one pass.
    fn agree(text: &str) -> bool {
        let mut one_pass = false;
        for fast in [true, false] {
            let mut ev = Event::Other;
            parse_standard_into(text, &mut ev, &mut KeyOrder::new(fast));
            let Event::Batch(b) = ev else {
                continue;
            };
            // the same line with its layout's plan reads alike
            let mut planned = b.clone();
            planned.plan = UsualPlan::of(&b);
            // and without the unchecked parse of a plan of plain values
            let mut checked = planned.clone();
            checked.plan.mode &= !(SURE | WIDE);
            // and with it, one value at a time rather than all at once
            let mut narrow = planned.clone();
            narrow.plan.mode &= !WIDE;
            assert_eq!(
                format!("{:?}", (planned.usual_decode(), planned.usual_prefill())),
                format!("{:?}", (narrow.usual_decode(), narrow.usual_prefill())),
                "{text}"
            );
            assert_eq!(
                format!("{:?}", (planned.usual_decode(), planned.usual_prefill())),
                format!("{:?}", (checked.usual_decode(), checked.usual_prefill())),
                "{text}"
            );
            assert_eq!(
                format!("{:?}", (planned.usual_decode(), planned.usual_prefill())),
                format!("{:?}", (b.usual_decode(), b.usual_prefill())),
                "{text}"
            );
            if fast && (b.usual_decode().is_some() || b.usual_prefill().is_some()) {
                assert_ne!(planned.plan, UsualPlan::NONE, "{text}");
            }
            if let Some(r) = b.usual_decode() {
                assert_eq!(
                    format!("{r:?}"),
                    format!("{:?}", decode_by_accessors(&b)),
                    "{text}"
                );
                // no other key has a field: every other reading of a sample is absent
                assert_eq!(b.graph_on_npu(), (r.graph, false), "{text}");
                assert_eq!(
                    (
                        b.accept_rate(),
                        b.cap_len(),
                        b.pre_allocated_usage(),
                        b.mamba_usage()
                    ),
                    (None, None, None, None),
                    "{text}"
                );
                assert_eq!(
                    (b.prealloc_req(), b.transfer_req(), b.swa_token_usage()),
                    (None, None, None),
                    "{text}"
                );
                assert_eq!(b.fwd_occupancy(), None, "{text}");
                one_pass |= fast;
            }
            if let Some(r) = b.usual_prefill() {
                assert_eq!(
                    format!("{r:?}"),
                    format!("{:?}", prefill_by_accessors(&b)),
                    "{text}"
                );
                assert_eq!(b.graph_on_npu(), (r.graph, false), "{text}");
                assert_eq!(
                    (b.mamba_usage(), b.prealloc_req(), b.inflight_req()),
                    (None, None, None),
                    "{text}"
                );
                assert_eq!(b.fwd_occupancy(), None, "{text}");
                one_pass |= fast;
            }
        }
        one_pass
    }

    #[test]
    fn usual_lines_are_read_in_one_pass_as_the_accessors_read_them() {
        for text in [
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.01, cuda graph: True, gen throughput (token/s): 1066.23, #queue-req: 0",
            "Decode batch, #running-req: 16, #token: 48123, token usage: 0.85, accept len: 2.89, cuda graph: False, gen throughput (token/s): 831.69, #queue-req: 146, ",
            "Decode batch. #running-req: 0, #token: 0, token usage: 0.00, gen throughput (token/s): 0.00, #queue-req: 0",
            "Decode batch. #running-req: 4",
            "Prefill batch. #new-seq: 7, #new-token: 2422, #cached-token: 371, token usage: 0.01, #running-req: 7, #queue-req: 146",
            "Prefill batch. #new-seq: 7, #new-token: 1785, #cached-token: 3822, token usage: 0.03, #running-req: 9, #queue-req: 140, #pending-token: 642, input throughput (token/s): 28879.56",
            "Prefill batch. #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, cuda graph: True",
        ] {
            assert!(agree(text), "{text}");
            // SGLang's values are of the plain forms: a layout's plan reads them unchecked
            let mut ev = Event::Other;
            parse_standard_into(text, &mut ev, &mut KeyOrder::new(true));
            let Event::Batch(b) = ev else {
                panic!("{text}")
            };
            assert!(UsualPlan::of(&b).sure(), "{text}");
        }
    }

    /// Every length of every reading (counts of 1 to 8 digits, `%.2f` of 1 to 5 digits before
    /// the `.`), each digit in every place: the wide read gives the accessors' readings.
    #[test]
    fn every_value_length_reads_alike() {
        let digits = |n: usize, seed: usize| -> String {
            (0..n)
                .map(|k| char::from(b'0' + ((seed * 7 + k * 3 + n) % 10) as u8))
                .collect()
        };
        let mut wide = 0;
        for seed in 0..10 {
            for n in 1..=8 {
                let c = |k: usize| digits(n.min(8 - k % 3).max(1), seed + k);
                let h = |k: usize| {
                    let m = (n + k) % 4 + 1;
                    format!("{}.{}", digits(m, seed + k), digits(2, seed + 2 * k))
                };
                for text in [
                    format!(
                        "Decode batch. #running-req: {}, #token: {}, token usage: 0.{}, accept len: {}.{}, cuda graph: True, gen throughput (token/s): {}, #queue-req: {}",
                        c(0),
                        c(1),
                        digits(2, seed + n),
                        digits(1, seed),
                        digits(2, n),
                        h(2),
                        digits(n, seed + 9)
                    ),
                    format!(
                        "Prefill batch. #new-seq: {}, #new-token: {}, #cached-token: {}, token usage: 0.{}, #running-req: {}, #queue-req: {}, #pending-token: 7, input throughput (token/s): {}, cuda graph: False",
                        c(0),
                        c(1),
                        digits(n, seed + 4),
                        digits(2, seed + 2 * n),
                        c(2),
                        c(3),
                        h(4)
                    ),
                ] {
                    // (a count too long to be sound on sight is read by the accessors)
                    if !agree(&text) {
                        continue;
                    }
                    let mut ev = Event::Other;
                    parse_standard_into(&text, &mut ev, &mut KeyOrder::new(true));
                    let Event::Batch(b) = ev else {
                        panic!("{text}")
                    };
                    wide += usize::from(UsualPlan::of(&b).mode & WIDE != 0);
                }
            }
        }
        // (a CPU without AVX2 reads them one at a time)
        assert!(wide >= 100 || !has_avx2(), "{wide}");
    }

    #[test]
    fn other_lines_are_left_to_the_accessors_or_read_alike() {
        for text in [
            // values of other forms than SGLang's: long, signed, not `%.2f`, flags of any case
            "Decode batch. #running-req: 123456789, #token: 10, token usage: 0.01, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.5, gen throughput (token/s): 1066.2, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 1.25, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.01, gen throughput (token/s): 123456.78, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.01, gen throughput (token/s): 99999999, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.01, gen throughput (token/s): 1e5, #queue-req: 0",
            "Decode batch. #running-req: -4, #token: 10, #queue-req: 0",
            "Decode batch. #running-req: 4, cuda graph: true, #queue-req: 0",
            "Decode batch. #running-req: 4, cuda graph: maybe, #queue-req: 0",
            "Decode batch. #running-req: 4, cuda graph: TRUE, #queue-req: 0",
            "Decode batch. #running-req: 4, token usage: nan, #queue-req: 0",
            "Decode batch. #running-req: 4, token usage: 0.99999, #queue-req: 0",
            "Decode batch. #running-req: 4, accept len: 123.45, #queue-req: 0",
            "Decode batch. #running-req: 10000000, #queue-req: 0",
            // other keys: stand-ins, parts, other graph devices, repeats, unknown keys
            "Decode batch. #running_req: 4, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: full=10, swa=5, token usage: full=0.01, swa=0.02, #queue-req: 0",
            "Decode batch. #running-req: 4, #full token: 10, full token usage: 0.01, #queue-req: 0",
            "Decode batch. #running-req: 4, npu graph: True, #queue-req: 0",
            "Decode batch. #running-req: 4, xpu graph: True, cuda graph: False, #queue-req: 0",
            "Decode batch. #running-req: 4, #running-req: 5, #queue-req: 0",
            "Decode batch. #running-req: 4, #new thing: 3, #queue-req: 0",
            "Decode batch. #running-req: 4, accept rate: 0.80, #queue-req: 0",
            "Decode batch. #running-req: 4, fwd occupancy: 87.31%, #queue-req: 0",
            "Decode batch. #running-req: 4, mamba usage: 0.10, #queue-req: 0",
            "Decode batch. #running-req: 4, npu graph: True,, #queue-req: 0",
            "Prefill batch. #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #inflight-req: 2",
            "Prefill batch. #seq: 1, #new-token: 5, #queue-req: 0",
            "Prefill batch(mixed #running-req: 3). #new-seq: 1, npu graph: True",
            "Prefill batch. #new-seq: 1, #new-token: 5, input throughput (token/s): 128879.56",
            "Prefill batch. #new-seq: 1, mamba usage: 0.50, #queue-req: 0",
        ] {
            agree(text);
        }
    }
}
