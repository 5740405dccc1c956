//! Number parsing from ASCII digit slices (no allocation, no locale).

/// Powers of ten that are exact in an `f64` (10^0 ..= 10^22).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Parses a non-negative decimal integer made only of ASCII digits (1 to 19 digits).
#[inline]
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    parse_u64_bytes(s.as_bytes())
}

/// [`parse_u64`] on bytes.
///
/// One or two digits (a queue, a running count) inline; longer runs in
/// [`parse_u64_longer`].
#[inline(always)]
pub(crate) fn parse_u64_bytes(b: &[u8]) -> Option<u64> {
    if let [a] = *b {
        let d = a.wrapping_sub(b'0');
        (d <= 9).then_some(u64::from(d))
    } else if let [a, c] = *b {
        let (x, y) = (a.wrapping_sub(b'0'), c.wrapping_sub(b'0'));
        (x.max(y) <= 9).then(|| u64::from(x) * 10 + u64::from(y))
    } else {
        parse_u64_longer(b)
    }
}

/// [`parse_u64_bytes`] of any length but one or two: three digits one by one, four to eight
/// as one word (SWAR), longer runs digit by digit.
#[inline(never)]
fn parse_u64_longer(b: &[u8]) -> Option<u64> {
    match *b {
        [a, c, e] => {
            let (x, y, z) = (
                a.wrapping_sub(b'0'),
                c.wrapping_sub(b'0'),
                e.wrapping_sub(b'0'),
            );
            (x.max(y).max(z) <= 9).then(|| u64::from(x) * 100 + u64::from(y) * 10 + u64::from(z))
        }
        _ if b.len() >= 4 && b.len() <= 8 => {
            let (w, pad) = right_aligned(b);
            swar_digits(w, pad)
        }
        _ => parse_u64_long(b),
    }
}

/// [`parse_u64_bytes`] of 9 or more bytes (none or more than 19 is not a number).
#[inline(never)]
fn parse_u64_long(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u64::from(d);
    }
    Some(v)
}

/// `'0'` in every byte of a word.
const ZEROS: u64 = 0x3030_3030_3030_3030;

/// The 4 to 8 bytes of `b` right-aligned in a little-endian word (its first byte is the
/// word's byte `8 - len`), zero bytes before them: two overlapping 4-byte loads. Also the
/// number of zero bits in front (0 to 32). `b` of another length gives a word of no meaning
/// (callers check the length).
#[inline(always)]
fn right_aligned(b: &[u8]) -> (u64, u32) {
    let n = b.len();
    let (Some(head), Some(tail)) = (b.first_chunk::<4>(), b.last_chunk::<4>()) else {
        return (0, 0);
    };
    let pad = 8 * (8 - n.min(8)) as u32;
    let lo = u64::from(u32::from_le_bytes(*head));
    let hi = u64::from(u32::from_le_bytes(*tail));
    (hi << 32 | ((lo << pad) & 0xffff_ffff), pad)
}

/// The value of a word of ASCII digits (the first the most significant) after `pad` zero
/// bits (at most 56), `None` when a byte after them is not a digit.
#[inline(always)]
fn swar_digits(w: u64, pad: u32) -> Option<u64> {
    // each digit byte to its value; the zero bytes in front stay zero (a leading 0)
    let v = w.wrapping_sub(ZEROS << pad);
    // a byte that was below '0' has its top bit set (or borrowed from the next, which then
    // is above 0x7f or was below '0' itself); one above '9' has it set once 0x76 is added
    // (a carry out of a byte needs its top bit set already)
    if (v | v.wrapping_add(0x7676_7676_7676_7676)) & 0x8080_8080_8080_8080 != 0 {
        return None;
    }
    Some(swar_values(v))
}

/// The value of a word of digit values (each byte 0 to 9, the first the most significant,
/// zero bytes in front): pairs, then fours, then all eight, each step below its lane's size,
/// so no carry.
#[inline(always)]
fn swar_values(v: u64) -> u64 {
    let v = v.wrapping_mul(10).wrapping_add(v >> 8) & 0x00ff_00ff_00ff_00ff;
    let v = v.wrapping_mul(100).wrapping_add(v >> 16) & 0x0000_ffff_0000_ffff;
    v.wrapping_mul(10_000).wrapping_add(v >> 32) & 0xffff_ffff
}

/// A value of 1 to 8 bytes as [`u64_of_tail`], [`hundredths_of_tail`] and [`bool_of_tail`]
/// read it: `tail` holds the 8 bytes that end with the value (a little-endian word, so the
/// value's last byte is its top byte; the bytes before the value are any) and `len` is the
/// value's length.
///
/// The value right-aligned with its `pad` zero bits in front (0 to 56), for the word-wise
/// parse; `len` is 1 to 8 (callers check it).
#[inline(always)]
fn right_aligned_tail(tail: u64, len: usize) -> (u64, u32) {
    // ok: len is 1 to 8, pad 0 to 56
    let pad = 8 * (8 - len.clamp(1, 8) as u32);
    (tail & (u64::MAX << pad), pad)
}

/// [`parse_u64_bytes`] of a value of `len` bytes (1 to 8; `None` for any other length) that
/// ends `tail` (see [`right_aligned_tail`]): one or two digits (a queue, a running count)
/// from the word's top bytes, longer runs as one word (SWAR); no loop.
#[inline(always)]
pub(crate) fn u64_of_tail(tail: u64, len: usize) -> Option<u64> {
    let last = ((tail >> 56) as u8).wrapping_sub(b'0');
    match len {
        1 => (last <= 9).then_some(u64::from(last)),
        2 => {
            let first = ((tail >> 48) as u8).wrapping_sub(b'0');
            (first.max(last) <= 9).then(|| u64::from(first) * 10 + u64::from(last))
        }
        3..=8 => {
            let (w, pad) = right_aligned_tail(tail, len);
            swar_digits(w, pad)
        }
        _ => None,
    }
}

/// [`parse_f64_bytes`] of a value of `len` bytes that ends `tail` (see
/// [`right_aligned_tail`]), when the value is SGLang's `%.2f` of 1 to 5 digits before the `.`
/// (`0.85`, `1066.23`): as [`parse_f64_bytes`] reads it (`0.dd` from its two digits, the
/// longer ones as [`parse_f64_longer`] does: the digits as one integer over 100, the `.` taken
/// out of the word), the same bits. `None` for any other value ([`parse_f64_bytes`] reads
/// those).
#[inline(always)]
pub(crate) fn hundredths_of_tail(tail: u64, len: usize) -> Option<f64> {
    const ZERO_DOT: u16 = u16::from_le_bytes(*b"0.");
    if len == 4 && (tail >> 32) as u16 == ZERO_DOT {
        let (x, y) = (
            ((tail >> 48) as u8).wrapping_sub(b'0'),
            ((tail >> 56) as u8).wrapping_sub(b'0'),
        );
        return (x.max(y) <= 9).then(|| f64::from(x * 10 + y) / 100.0);
    }
    // the `.` is the word's byte 5, after at least one digit
    if !(4..=8).contains(&len) || (tail >> 40) as u8 != b'.' {
        return None;
    }
    let (w, pad) = right_aligned_tail(tail, len);
    // bytes 0-4 move up one over the `.`, a zero in front
    let digits = (w & 0xff_ffff_ffff) << 8 | (w & 0xffff << 48);
    // ok: at most 7 digits, below 2^53, exact as an `f64`
    swar_digits(digits, pad + 8).map(|m| m as f64 / 100.0)
}

/// Bit 7 of each byte of `w` that is an ASCII digit, every other bit clear: a byte below 0x80
/// whose low 7 bits reach bit 7 when 0x50 is added (`>= '0'`) but not when 0x46 is
/// (`< ':'`); 7-bit adds carry into no other byte.
#[inline(always)]
pub(crate) fn digit_bytes(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let low = w & !HIGH;
    let ge0 = (low + ONES * 0x50) & HIGH;
    let gt9 = (low + ONES * 0x46) & HIGH;
    ge0 & !gt9 & !w & HIGH
}

/// [`u64_of_tail`] of a value known to be 1 to 8 ASCII digits (a layout's value whose learnt
/// line's was: every line of the layout has digits in the same bytes): the same value,
/// without the checks. Any other value gives a number of no meaning.
#[inline(always)]
pub(crate) fn u64_of_digit_tail(tail: u64, len: usize) -> u64 {
    let last = ((tail >> 56) as u8).wrapping_sub(b'0');
    match len {
        1 => u64::from(last),
        2 => u64::from(((tail >> 48) as u8).wrapping_sub(b'0')) * 10 + u64::from(last),
        _ => {
            // (a length over 8 shifts by its low bits: no meaning, no panic)
            let pad = 64u32.wrapping_sub(8 * len as u32);
            let w = tail & u64::MAX.wrapping_shl(pad);
            swar_values(w.wrapping_sub(ZEROS.wrapping_shl(pad)))
        }
    }
}

/// [`hundredths_of_tail`] of a value known to be of its form (`d.dd` to `ddddd.dd`, 4 to 8
/// bytes; see [`u64_of_digit_tail`]): the same bits, without the checks. Any other value
/// gives a number of no meaning.
#[inline(always)]
pub(crate) fn hundredths_of_digit_tail(tail: u64, len: usize) -> f64 {
    if len == 4 {
        // `d.dd`
        let d = |at: u32| u32::from(((tail >> at) as u8).wrapping_sub(b'0'));
        return f64::from(d(32) * 100 + d(48) * 10 + d(56)) / 100.0;
    }
    // (a length over 8 shifts by its low bits: no meaning, no panic)
    let pad = 64u32.wrapping_sub(8 * len as u32);
    let w = tail & u64::MAX.wrapping_shl(pad);
    // as `hundredths_of_tail`: bytes 0-4 up one over the `.`, a zero in front
    let digits = (w & 0xff_ffff_ffff) << 8 | (w & 0xffff << 48);
    // ok: at most 7 digits, below 2^53, exact as an `f64`
    swar_values(digits.wrapping_sub(ZEROS.wrapping_shl(pad + 8))) as f64 / 100.0
}

/// [`parse_bool`] of a value of `len` bytes that ends `tail` (see [`right_aligned_tail`]):
/// `True`/`true`, `False`/`false` by one compare each.
#[inline(always)]
pub(crate) fn bool_of_tail(tail: u64, len: usize) -> Option<bool> {
    const TRUE: u64 = u32::from_le_bytes(*b"True") as u64;
    const LOWER_TRUE: u64 = u32::from_le_bytes(*b"true") as u64;
    const FALSE: u64 = u64::from_le_bytes(*b"False\0\0\0");
    const LOWER_FALSE: u64 = u64::from_le_bytes(*b"false\0\0\0");
    match len {
        4 if matches!(tail >> 32, TRUE | LOWER_TRUE) => Some(true),
        5 if matches!(tail >> 24, FALSE | LOWER_FALSE) => Some(false),
        _ => None,
    }
}

/// Parses a signed decimal integer (`-1` is a valid `chunked_prefill_size`).
#[cfg(test)]
pub(crate) fn parse_i64(s: &str) -> Option<i64> {
    parse_i64_bytes(s.as_bytes())
}

/// [`parse_i64`] on bytes.
pub(crate) fn parse_i64_bytes(b: &[u8]) -> Option<i64> {
    match b.strip_prefix(b"-") {
        Some(rest) => parse_u64_bytes(rest)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        None => parse_u64_bytes(b).and_then(|v| i64::try_from(v).ok()),
    }
}

/// Parses a decimal float such as `0.93`, `1397.13` or `-2.5`.
///
/// Fast path: up to 19 significant digits and up to 22 fraction digits are combined as
/// `mantissa / 10^k`, one correctly rounded division of two exact values, so the result equals
/// what `str::parse::<f64>` returns. Anything else (exponents, `inf`, `nan`, very long digit
/// runs) falls back to `str::parse`.
#[inline]
pub(crate) fn parse_f64(s: &str) -> Option<f64> {
    parse_f64_bytes(s.as_bytes())
}

/// [`parse_f64`] on bytes (bytes that are not UTF-8 are not a number).
///
/// SGLang's `%.2f` (digits, `.`, 2 digits) is read as a mantissa below 10^15 < 2^53, exact as
/// an `f64`, then one correctly rounded division by 100: the value `str::parse` gives. A
/// fraction `0.dd` (`token usage: 0.85`) inline; any other form in [`parse_f64_longer`].
#[inline(always)]
pub(crate) fn parse_f64_bytes(b: &[u8]) -> Option<f64> {
    if let [b'0', b'.', d1, d2] = *b {
        let (x, y) = (d1.wrapping_sub(b'0'), d2.wrapping_sub(b'0'));
        if x.max(y) <= 9 {
            return Some(f64::from(x * 10 + y) / 100.0);
        }
    }
    parse_f64_longer(b)
}

/// [`parse_f64_bytes`] but for its inline case: `%.2f` of 1 to 5 digits before the `.` as one
/// word of eight digits (SWAR), of 6 to 13 digit by digit, any other form by
/// [`parse_f64_general_bytes`].
#[inline(never)]
fn parse_f64_longer(b: &[u8]) -> Option<f64> {
    let n = b.len();
    if n.wrapping_sub(4) <= 4 && b[n - 3] == b'.' {
        let (w, pad) = right_aligned(b);
        // the `.` is the word's byte 5: drop it (bytes 0-4 move up one, a zero in front)
        let digits = (w & 0xff_ffff_ffff) << 8 | (w & 0xffff << 48);
        if let Some(mant) = swar_digits(digits, pad + 8) {
            return Some(mant as f64 / 100.0);
        }
    } else if let [ref int @ .., b'.', d1, d2] = *b
        && !int.is_empty()
        && int.len() <= 13
    {
        let (d1, d2) = (d1.wrapping_sub(b'0'), d2.wrapping_sub(b'0'));
        let mut mant: u64 = 0;
        let mut ok = d1 <= 9 && d2 <= 9;
        for &c in int {
            let d = c.wrapping_sub(b'0');
            ok &= d <= 9;
            mant = mant * 10 + u64::from(d);
        }
        if ok {
            return Some((mant * 100 + u64::from(d1) * 10 + u64::from(d2)) as f64 / 100.0);
        }
    }
    parse_f64_text(b)
}

/// [`parse_f64_general_bytes`], kept out of line (its call to `str::parse` needs a frame).
#[inline(never)]
fn parse_f64_text(b: &[u8]) -> Option<f64> {
    parse_f64_general_bytes(b)
}

/// The library's parse of `b` as text (`None` for invalid UTF-8): the exact routine for the
/// forms the digit loop of [`parse_f64_general_bytes`] leaves to it.
#[cold]
fn parse_f64_library(b: &[u8]) -> Option<f64> {
    std::str::from_utf8(b).ok()?.parse::<f64>().ok()
}

/// [`parse_f64`] for any decimal form, on bytes: the plain decimal forms by one digit loop
/// (no UTF-8 check: a byte that is no digit, `.` or leading sign goes to
/// [`parse_f64_library`]).
fn parse_f64_general_bytes(b: &[u8]) -> Option<f64> {
    let s = b;
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let mut mant: u64 = 0;
    let mut ndig = 0usize;
    let mut frac = 0usize;
    let mut seen_dot = false;
    let mut seen_digit = false;
    for &c in digits {
        if c == b'.' {
            if seen_dot {
                return None;
            }
            seen_dot = true;
            continue;
        }
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return parse_f64_library(s);
        }
        seen_digit = true;
        if mant == 0 && d == 0 {
            // leading zeros do not count towards the 19-digit budget
        } else {
            ndig += 1;
        }
        if ndig > 19 {
            return parse_f64_library(s);
        }
        mant = mant * 10 + u64::from(d);
        if seen_dot {
            frac += 1;
        }
    }
    if !seen_digit || frac >= POW10.len() {
        return if seen_digit {
            parse_f64_library(s)
        } else {
            None
        };
    }
    // A u64 with at most 19 digits may exceed 2^53; then the conversion rounds and the
    // division is no longer a single rounding: use the exact library routine instead.
    if mant > (1u64 << 53) {
        return parse_f64_library(s);
    }
    let v = mant as f64 / POW10[frac];
    Some(if neg { -v } else { v })
}

/// The unsigned decimal number `s` starts with (its digits and dots, e.g. `20.14` of
/// `20.14 GB)`), when it is finite: a figure glued to its unit or closing bracket.
pub(crate) fn leading_f64(s: &str) -> Option<f64> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    parse_f64(&s[..end]).filter(|x| x.is_finite() && *x >= 0.0)
}

/// Parses a percentage such as `12.34%` (or `12.34`) and returns it as a fraction (`0.1234`).
pub(crate) fn parse_percent_fraction(s: &str) -> Option<f64> {
    let t = s.trim_end();
    let t = t.strip_suffix('%').unwrap_or(t).trim_end();
    parse_f64(t).map(|v| v / 100.0)
}

/// Parses a Python bool as printed by SGLang (`True`/`False`; lowercase accepted), from its
/// bytes (a slice compare, no string equality calls).
#[inline]
pub(crate) fn parse_bool(b: &[u8]) -> Option<bool> {
    match b {
        b"True" | b"true" => Some(true),
        b"False" | b"false" => Some(false),
        _ => None,
    }
}

/// Parses a quantity followed by a unit word, e.g. `58.76 GB` with unit `GB`; the unit may be
/// glued to the number (`2.5GB`) and a trailing `.` is ignored.
pub(crate) fn parse_with_unit(s: &str, unit: &str) -> Option<f64> {
    let t = s.trim().trim_end_matches('.');
    let t = t.strip_suffix(unit).unwrap_or(t).trim_end();
    parse_f64(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_match_std() {
        for s in [
            "0.93",
            "1397.13",
            "0.0980",
            "232203.03",
            "0",
            "7",
            "-2.5",
            "0.1",
            "3.3333333333333",
            "123456789012345678",
            "1e5",
            "12345678901234567890.5",
            "0.00",
            "1066.23",
            "28879.56",
            "00.10",
            "9999999999999.99",
            "99999999999999.99",
            "1.2x",
            "x.25",
            ".25",
            "1..5",
        ] {
            assert_eq!(parse_f64(s), s.parse::<f64>().ok(), "{s}");
        }
        assert_eq!(parse_f64(""), None);
        assert_eq!(parse_f64("."), None);
        assert_eq!(parse_f64("1.2.3"), None);
        assert_eq!(parse_f64("abc"), None);
    }

    /// The integer parser before the length cases and the word-wise (SWAR) digits: the
    /// reference the fast forms are held to.
    fn parse_u64_reference(b: &[u8]) -> Option<u64> {
        if b.is_empty() || b.len() > 19 {
            return None;
        }
        b.iter().try_fold(0u64, |v, &c| {
            let d = c.wrapping_sub(b'0');
            (d <= 9).then(|| v * 10 + u64::from(d))
        })
    }

    /// What `str::parse::<f64>` makes of the bytes, as bits (`None` for bytes that are not
    /// UTF-8, as `parse_f64_bytes` has it).
    fn std_f64(b: &[u8]) -> Option<u64> {
        std::str::from_utf8(b)
            .ok()?
            .parse::<f64>()
            .ok()
            .map(f64::to_bits)
    }

    #[test]
    fn every_length_of_digits_and_every_misplaced_byte() {
        // each length 0..=21, each byte of it replaced by each of the bytes around the digits
        // (and a `.`, NUL, a high byte), at every place
        for n in 0..=21usize {
            let digits: Vec<u8> = (0..n).map(|i| b"9081726354"[i % 10]).collect();
            let mut cases = vec![digits.clone()];
            for i in 0..n {
                for bad in [b'/', b':', b'.', 0, 0x80, 0xb9, b'0' + 0x80, b' '] {
                    let mut c = digits.clone();
                    c[i] = bad;
                    cases.push(c);
                }
            }
            for c in &cases {
                assert_eq!(parse_u64_bytes(c), parse_u64_reference(c), "{c:?}");
                let s = std::str::from_utf8(c).ok();
                if n <= 19 && c.iter().all(u8::is_ascii_digit) {
                    assert_eq!(parse_u64_bytes(c), s.and_then(|s| s.parse().ok()), "{c:?}");
                }
                // the same bytes as `%.2f`: a `.` before the last two
                if n >= 3 {
                    let mut f = c.clone();
                    f[n - 3] = b'.';
                    assert_eq!(parse_f64_bytes(&f).map(f64::to_bits), std_f64(&f), "{f:?}");
                }
                assert_eq!(parse_f64_bytes(c).map(f64::to_bits), std_f64(c), "{c:?}");
            }
        }
        // bytes whose word-wise sums would overflow (a panic in a debug build) are no number
        assert_eq!(parse_u64_bytes(&[0, 0, 128, 22]), None);
        assert_eq!(parse_u64_bytes(&[0xff; 8]), None);
        assert_eq!(
            parse_f64_bytes(&[0xff, 0xff, 0xff, 0xff, b'.', 0xff, 0xff]),
            None
        );
        assert_eq!(parse_u64_bytes(b"99999999"), Some(99_999_999));
        assert_eq!(parse_u64_bytes(b"00000000"), Some(0));
        assert_eq!(parse_u64_bytes(b"18446744073709551615"), None);
        assert_eq!(parse_f64_bytes(b"99999.99"), Some(99999.99));
        assert_eq!(parse_f64_bytes(b"0.85"), Some(0.85));
    }

    proptest::proptest! {
        /// Short decimal numbers as SGLang prints them and near-misses: the integer parser is
        /// `str::parse::<u64>` on 1 to 19 digits and its reference on anything.
        #[test]
        fn u64_is_std_on_short_decimals(s in r"[0-9]{1,21}|[0-9+\-. ]{0,10}|0{0,3}[0-9]{1,8}") {
            let b = s.as_bytes();
            proptest::prop_assert_eq!(parse_u64_bytes(b), parse_u64_reference(b));
            if b.len() <= 19 && b.iter().all(u8::is_ascii_digit) {
                proptest::prop_assert_eq!(parse_u64_bytes(b), s.parse::<u64>().ok());
            }
        }

        /// The float parser is `str::parse::<f64>` bit for bit on short decimals (`0.85`,
        /// `1066.23`, `146`), their near-misses and any short string of number bytes.
        #[test]
        fn f64_is_std_on_short_decimals(
            s in r"[0-9]{1,6}\.[0-9]{2}|0\.[0-9]{2}|[0-9]{0,16}\.?[0-9]{0,24}|[0-9eE+\-. x]{0,12}"
        ) {
            proptest::prop_assert_eq!(parse_f64(&s).map(f64::to_bits), std_f64(s.as_bytes()));
        }

        /// Any bytes (not UTF-8 included): the same answers as the references.
        #[test]
        fn any_bytes_are_the_references(b in proptest::collection::vec(proptest::num::u8::ANY, 0..12)) {
            proptest::prop_assert_eq!(parse_u64_bytes(&b), parse_u64_reference(&b));
            proptest::prop_assert_eq!(parse_f64_bytes(&b).map(f64::to_bits), std_f64(&b));
        }
    }

    /// `b` (1 to 8 bytes) as the end of an 8-byte word after `junk` bytes, as a value's tail
    /// is loaded from its line: the word and the length.
    fn tail_of(junk: u8, b: &[u8]) -> (u64, usize) {
        let mut w = [junk; 8];
        w[8 - b.len()..].copy_from_slice(b);
        (u64::from_le_bytes(w), b.len())
    }

    /// The tail parsers against the byte parsers they stand in for: the integer and the flag
    /// parsers give the same answer on every value, the `%.2f` one the same bits whenever it
    /// answers, and it answers on every `%.2f` of 1 to 5 digits.
    fn tails_agree(b: &[u8]) {
        for junk in [0, b'0', b'.', 0xff, b'e'] {
            let (t, n) = tail_of(junk, b);
            assert_eq!(u64_of_tail(t, n), parse_u64_bytes(b), "{b:?} {junk}");
            assert_eq!(bool_of_tail(t, n), parse_bool(b), "{b:?} {junk}");
            let fast = hundredths_of_tail(t, n).map(f64::to_bits);
            if fast.is_some() {
                assert_eq!(fast, parse_f64_bytes(b).map(f64::to_bits), "{b:?} {junk}");
            }
            if let [int @ .., b'.', x, y] = b
                && (1..=5).contains(&int.len())
                && int.iter().chain([x, y]).all(u8::is_ascii_digit)
            {
                assert!(fast.is_some(), "{b:?}");
            }
            // the unchecked parsers: the checked ones' answer wherever those answer
            if let Some(v) = u64_of_tail(t, n) {
                assert_eq!(u64_of_digit_tail(t, n), v, "{b:?} {junk}");
            }
            if let Some(f) = fast {
                assert_eq!(hundredths_of_digit_tail(t, n).to_bits(), f, "{b:?} {junk}");
            }
        }
    }

    #[test]
    fn tails_are_the_byte_parsers() {
        for b in [
            &b"0"[..],
            b"7",
            b"42",
            b"146",
            b"12279",
            b"9999999",
            b"99999999",
            b"00000000",
            b"0.00",
            b"0.85",
            b"2.89",
            b"831.69",
            b"1066.23",
            b"28879.56",
            b"99999.99",
            b"0.0980",
            b"1.5",
            b".25",
            b"5.",
            b"1e5",
            b"-2.5",
            b"+1",
            b"True",
            b"true",
            b"False",
            b"false",
            b"TRUE",
            b"Fals",
            b"\0True",
            b"\0\0\0",
            b"nan",
            b"1.2.3",
            b"0.8x",
            b"x.25",
            b"12:4",
        ] {
            tails_agree(b);
        }
        // no answer for no value or one longer than a word
        assert_eq!(u64_of_tail(u64::from_le_bytes(*b"12345678"), 0), None);
        assert_eq!(u64_of_tail(u64::from_le_bytes(*b"12345678"), 9), None);
        assert_eq!(
            hundredths_of_tail(u64::from_le_bytes(*b"12345.78"), 9),
            None
        );
        assert_eq!(bool_of_tail(u64::from_le_bytes(*b"xxxxTrue"), 9), None);
    }

    proptest::proptest! {
        /// Any 1 to 8 bytes of numbers, flags and their near-misses: the tail parsers agree
        /// with the byte parsers.
        #[test]
        fn tails_agree_on_any_value(s in r"[0-9.]{1,8}|[0-9]{1,5}\.[0-9]{2}|0\.[0-9]{2}|[0-9TFrRuUeEfalsALS. \-+x]{1,8}") {
            tails_agree(s.as_bytes());
        }

        /// Any bytes (not UTF-8 included).
        #[test]
        fn tails_agree_on_any_bytes(b in proptest::collection::vec(proptest::num::u8::ANY, 1..=8)) {
            tails_agree(&b);
        }
    }

    #[test]
    fn ints() {
        assert_eq!(parse_u64("12279"), Some(12279));
        assert_eq!(parse_u64("12a"), None);
        assert_eq!(parse_u64(""), None);
        assert_eq!(parse_u64("99999999999999999999"), None);
        assert_eq!(parse_i64("-1"), Some(-1));
        assert_eq!(parse_percent_fraction("12.5%"), Some(0.125));
        assert_eq!(parse_with_unit("58.76 GB", "GB"), Some(58.76));
        assert_eq!(parse_with_unit("2.50GB.", "GB"), Some(2.5));
    }
}
