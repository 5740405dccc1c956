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
#[inline]
pub(crate) fn parse_u64_bytes(b: &[u8]) -> Option<u64> {
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
#[inline]
pub(crate) fn parse_f64_bytes(b: &[u8]) -> Option<f64> {
    // SGLang's `%.2f`: 1 to 13 digits, `.`, 2 digits. Same value as below (mant < 10^15 <
    // 2^53 is exact, then one correctly rounded division).
    if let [int @ .., b'.', d1, d2] = b
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
    parse_f64_general(std::str::from_utf8(b).ok()?)
}

/// [`parse_f64`] for any decimal form.
fn parse_f64_general(s: &str) -> Option<f64> {
    let b = s.as_bytes();
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
            return s.parse::<f64>().ok();
        }
        seen_digit = true;
        if mant == 0 && d == 0 {
            // leading zeros do not count towards the 19-digit budget
        } else {
            ndig += 1;
        }
        if ndig > 19 {
            return s.parse::<f64>().ok();
        }
        mant = mant * 10 + u64::from(d);
        if seen_dot {
            frac += 1;
        }
    }
    if !seen_digit || frac >= POW10.len() {
        return if seen_digit {
            s.parse::<f64>().ok()
        } else {
            None
        };
    }
    // A u64 with at most 19 digits may exceed 2^53; then the conversion rounds and the
    // division is no longer a single rounding: use the exact library routine instead.
    if mant > (1u64 << 53) {
        return s.parse::<f64>().ok();
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
