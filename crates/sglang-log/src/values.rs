//! Sound and impossible values of batch-line fields (issue 13 item 4).
//!
//! One bad number (`gen throughput (token/s): NaN`, `1e309`, `#queue-req: -3`, `token usage:
//! 97.00`, `#running-req: 184467440737`) must not change a headline silently. Every known numeric
//! key of a batch line has a value class with the range a real SGLang value can take; a value
//! outside it is *rejected*: the typed accessor returns `None` for it (so no sum, peak or mean
//! ever sees it), [`crate::BatchLine::rejected_fields`] says which field and why, and
//! [`crate::ParseStats`] counts it with its line number. The line's other fields are used as
//! usual.
//!
//! The limits are far above anything SGLang prints and far below what breaks arithmetic:
//! - request counts (`#running-req`, `#queue-req`, …): at most [`MAX_REQUESTS`] (10^7);
//! - token counts (`#token`, `#new-token`, `#pending-token`, …): at most [`MAX_TOKENS`] (10^12);
//! - pool usage fractions (`token usage`, …; SGLang prints `used / max_total_num_tokens`, at
//!   most 1.00, see `scheduler_metrics_mixin.py`): at most [`MAX_USAGE`] (1.5), and percentages
//!   at most 150%;
//! - throughputs (`gen throughput (token/s)`, `input throughput (token/s)`): at most
//!   [`MAX_TOKENS_PER_S`] (10^9 tokens/s);
//! - speculative-decoding lengths (`accept len`, …): at most [`MAX_STEP_TOKENS`] (10^4 tokens);
//! - the MFU estimates (TFLOP/s, GB/s per GPU): at most [`MAX_HARDWARE`] (10^6).
//!
//! Every one of them must be finite and not negative.

use crate::num::{parse_f64_bytes, parse_u64_bytes};

/// Most requests a count field may hold (requests).
pub const MAX_REQUESTS: u64 = 10_000_000;
/// Most tokens a token-count field may hold (tokens).
pub const MAX_TOKENS: u64 = 1_000_000_000_000;
/// Largest pool usage fraction accepted (fraction; SGLang's own values are at most 1.00).
pub const MAX_USAGE: f64 = 1.5;
/// Largest throughput accepted (tokens/s).
pub const MAX_TOKENS_PER_S: f64 = 1e9;
/// Largest per-step token length accepted (`accept len`, `cap len`; tokens).
pub const MAX_STEP_TOKENS: f64 = 1e4;
/// Largest MFU estimate accepted (TFLOP/s or GB/s per GPU).
pub const MAX_HARDWARE: f64 = 1e6;

/// What kind of quantity a known batch-line key holds, and so which values are sound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueClass {
    /// A count of requests: an integer 0 ..= [`MAX_REQUESTS`].
    Requests,
    /// A count of tokens: an integer 0 ..= [`MAX_TOKENS`].
    Tokens,
    /// A fraction 0 ..= [`MAX_USAGE`].
    Fraction,
    /// A percentage (`12.34%`), 0 ..= 150.
    Percent,
    /// `fwd occupancy`: a percentage, or `nan%` for a window the device timer did not measure
    /// (the scheduler's `fwd_occupancy` starts at NaN, `scheduler_metrics_mixin.py`): an idle
    /// reading, not an impossible value.
    Occupancy,
    /// Tokens per second, 0 ..= [`MAX_TOKENS_PER_S`].
    Rate,
    /// Tokens per speculative step, 0 ..= [`MAX_STEP_TOKENS`].
    StepTokens,
    /// An MFU estimate, 0 ..= [`MAX_HARDWARE`].
    Hardware,
    /// Not a number this crate checks (flags, stamps).
    Unchecked,
}

/// The class of a [`crate::KNOWN_KEYS`] entry, by its name.
pub(crate) const fn class_of(key: &str) -> ValueClass {
    let k = key.as_bytes();
    // a name ends in one of these
    if ends_with(k, b"usage") || ends_with(k, b"accept rate") {
        return ValueClass::Fraction;
    }
    if ends_with(k, b"(token/s)") {
        return ValueClass::Rate;
    }
    if ends_with(k, b"occupancy") {
        return ValueClass::Occupancy;
    }
    if ends_with(k, b"hit rate") || ends_with(k, b"hit_rate") {
        return ValueClass::Percent;
    }
    if ends_with(k, b"len") {
        return if eq(k, b"largest-len") {
            ValueClass::Tokens
        } else {
            ValueClass::StepTokens
        };
    }
    if ends_with(k, b"per GPU)") {
        return ValueClass::Hardware;
    }
    if ends_with(k, b"req") || eq(k, b"#new-seq") || eq(k, b"#seq") || eq(k, b"mamba num") {
        return ValueClass::Requests;
    }
    if ends_with(k, b"token") || ends_with(k, b"tokens") {
        return ValueClass::Tokens;
    }
    ValueClass::Unchecked
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn ends_with(a: &[u8], b: &[u8]) -> bool {
    if a.len() < b.len() {
        return false;
    }
    let off = a.len() - b.len();
    let mut i = 0;
    while i < b.len() {
        if a[off + i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Why a field's value was set aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rejection {
    /// Not a number of the field's kind (`#running-req: abc`, `#queue-req: 2.5`).
    NotANumber,
    /// `NaN`, `inf`, or a number beyond the range of an `f64` (`1e309`).
    NotFinite,
    /// Below zero, for a quantity that cannot be (`#queue-req: -3`).
    Negative,
    /// Above the most the quantity can be (see the module's limits): token usage far above 1,
    /// a running count above 10^7.
    AboveLimit,
}

impl Rejection {
    /// A few words for a report, e.g. `"not finite"`.
    pub fn describe(self) -> &'static str {
        match self {
            Rejection::NotANumber => "not a number",
            Rejection::NotFinite => "not finite",
            Rejection::Negative => "negative",
            Rejection::AboveLimit => "above the possible range",
        }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

/// One field of a batch line whose value was set aside (its accessor returns `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RejectedField<'a> {
    /// The key as printed, e.g. `gen throughput (token/s)`.
    pub key: &'a str,
    /// The value as printed, e.g. `NaN`.
    pub value: &'a str,
    /// Why it was set aside.
    pub reason: Rejection,
}

impl ValueClass {
    /// Whether the integer `v` is sound for this class.
    #[inline(always)]
    pub(crate) fn admits_u64(self, v: u64) -> bool {
        match self {
            ValueClass::Requests => v <= MAX_REQUESTS,
            ValueClass::Tokens => v <= MAX_TOKENS,
            _ => self.admits_f64(v as f64),
        }
    }

    /// Whether `x` is sound for this class (finite, not negative, within the limit).
    #[inline(always)]
    pub(crate) fn admits_f64(self, x: f64) -> bool {
        x.is_finite() && x >= 0.0 && x <= self.limit()
    }

    fn limit(self) -> f64 {
        match self {
            ValueClass::Requests => MAX_REQUESTS as f64,
            ValueClass::Tokens => MAX_TOKENS as f64,
            ValueClass::Fraction => MAX_USAGE,
            ValueClass::Percent | ValueClass::Occupancy => 100.0 * MAX_USAGE,
            ValueClass::Rate => MAX_TOKENS_PER_S,
            ValueClass::StepTokens => MAX_STEP_TOKENS,
            ValueClass::Hardware => MAX_HARDWARE,
            ValueClass::Unchecked => f64::INFINITY,
        }
    }

    /// Shortest value that could be out of range although it is made of digits and at most one
    /// `.` (bytes): values shorter than this are sound without being parsed.
    pub(crate) const fn plain_len(self) -> usize {
        match self {
            ValueClass::Requests => 8,
            ValueClass::Tokens => 13,
            ValueClass::Rate => 10,
            ValueClass::StepTokens => 5,
            ValueClass::Hardware => 7,
            // `1.60` is 4 bytes: parse every fraction; percentages up to `99.99` are sound
            ValueClass::Fraction => 0,
            ValueClass::Percent | ValueClass::Occupancy => 3,
            ValueClass::Unchecked => usize::MAX,
        }
    }

    /// Why `v` (a value as printed) is not sound for this class, or `None` when it is.
    #[inline]
    pub(crate) fn check(self, v: &[u8]) -> Option<Rejection> {
        if self == ValueClass::Unchecked {
            return None;
        }
        // SGLang's `0.92`: below 1 on sight
        if self == ValueClass::Fraction
            && let [b'0', b'.', d @ ..] = v
            && d.len() <= 6
            && d.iter().all(u8::is_ascii_digit)
        {
            return None;
        }
        let integer = matches!(self, ValueClass::Requests | ValueClass::Tokens);
        // SGLang's `%.2f` of a value below 10 (`accept len: 2.89`): plain, and shorter than any
        // class's limit that admits a fraction of 4 bytes (the `plain` test below, on sight)
        if let [a, b'.', c, d] = *v
            && !integer
            && self.plain_len() > 4
            && a.is_ascii_digit()
            && c.is_ascii_digit()
            && d.is_ascii_digit()
        {
            return None;
        }
        if v.len() < self.plain_len() && plain(v, !integer) {
            return None;
        }
        let v = match self {
            ValueClass::Percent | ValueClass::Occupancy => {
                let t = v.trim_ascii_end();
                t.strip_suffix(b"%").unwrap_or(t).trim_ascii_end()
            }
            _ => v,
        };
        if self == ValueClass::Occupancy && v.eq_ignore_ascii_case(b"nan") {
            return None;
        }
        if integer {
            if let Some(n) = parse_u64_bytes(v) {
                return (!self.admits_u64(n)).then_some(Rejection::AboveLimit);
            }
            // a count with a fraction is no count; a huge digit run is above any limit
            if v.iter().all(u8::is_ascii_digit) && !v.is_empty() {
                return Some(Rejection::AboveLimit);
            }
        }
        let Some(x) = parse_f64_bytes(v) else {
            return Some(Rejection::NotANumber);
        };
        if !x.is_finite() {
            Some(Rejection::NotFinite)
        } else if x < 0.0 {
            Some(Rejection::Negative)
        } else if x > self.limit() {
            Some(Rejection::AboveLimit)
        } else if integer {
            Some(Rejection::NotANumber)
        } else {
            None
        }
    }
}

/// Digits with at most one `.` (none unless `dot`), and at least one digit.
#[inline]
fn plain(v: &[u8], dot: bool) -> bool {
    let mut dots = 0;
    for &c in v {
        if c == b'.' {
            dots += 1;
        } else if !c.is_ascii_digit() {
            return false;
        }
    }
    dots <= usize::from(dot) && v.len() > dots
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `d.dd` shortcut of `check` says sound only where the general test does (plain and
    /// shorter than the class's `plain_len`), for every class.
    #[test]
    fn the_one_digit_fraction_shortcut_is_the_plain_test() {
        use ValueClass::*;
        for class in [
            Requests, Tokens, Fraction, Percent, Occupancy, Rate, StepTokens, Hardware, Unchecked,
        ] {
            let integer = matches!(class, Requests | Tokens);
            for v in [
                "2.89", "0.00", "9.99", "1.2x", "x.25", "1..2", ".123", "12.3", "1.2.", "-1.5",
            ] {
                let v = v.as_bytes();
                let general = v.len() < class.plain_len() && plain(v, !integer);
                if class != Unchecked && class != Fraction && general {
                    assert_eq!(class.check(v), None, "{class:?} {v:?}");
                }
                if let [a, b'.', c, d] = *v
                    && !integer
                    && class.plain_len() > 4
                    && [a, c, d].iter().all(u8::is_ascii_digit)
                {
                    assert!(general, "{class:?} {v:?}");
                }
            }
        }
    }

    #[test]
    fn classes_of_known_keys() {
        use ValueClass::*;
        for (k, c) in [
            ("#running-req", Requests),
            ("#queue-req", Requests),
            ("#remaining_req", Requests),
            ("#new-seq", Requests),
            ("mamba num", Requests),
            ("#token", Tokens),
            ("#cached_token", Tokens),
            ("#pending-token", Tokens),
            ("largest-len", Tokens),
            ("token usage", Fraction),
            ("pre-allocated usage", Fraction),
            ("accept rate", Fraction),
            ("gen throughput (token/s)", Rate),
            ("input throughput (token/s)", Rate),
            ("cache hit rate", Percent),
            ("tree_cache_hit_rate", Percent),
            ("fwd occupancy", Occupancy),
            ("accept len", StepTokens),
            ("cap len", StepTokens),
            ("est. read BW (GB/s per GPU)", Hardware),
            ("cuda graph", Unchecked),
            ("timestamp", Unchecked),
        ] {
            assert_eq!(class_of(k), c, "{k}");
        }
    }

    #[test]
    fn checks() {
        use Rejection::*;
        use ValueClass::*;
        for (class, v, want) in [
            (Rate, "NaN", Some(NotFinite)),
            (Rate, "nan", Some(NotFinite)),
            (Rate, "1e309", Some(NotFinite)),
            (Rate, "inf", Some(NotFinite)),
            (Rate, "-5.00", Some(Negative)),
            (Rate, "2991.53", None),
            (Rate, "1e12", Some(AboveLimit)),
            (Requests, "-3", Some(Negative)),
            (Requests, "10000000", None),
            (Requests, "10000001", Some(AboveLimit)),
            (Requests, "99999999999999999999999", Some(AboveLimit)),
            (Requests, "2.5", Some(NotANumber)),
            (Requests, "abc", Some(NotANumber)),
            (Tokens, "264288", None),
            (Fraction, "0.92", None),
            (Fraction, "1.50", None),
            (Fraction, "97.00", Some(AboveLimit)),
            (Fraction, "-0.10", Some(Negative)),
            (Percent, "12.34%", None),
            (Percent, "900.00%", Some(AboveLimit)),
            (Percent, "nan%", Some(NotFinite)),
            // an idle window's occupancy (a PD prefill line of a public report, sglang#… kimi-k2)
            (Occupancy, "nan%", None),
            (Occupancy, "87.31%", None),
            (Occupancy, "inf%", Some(NotFinite)),
            (Occupancy, "900.00%", Some(AboveLimit)),
            (Unchecked, "NaN", None),
        ] {
            assert_eq!(class.check(v.as_bytes()), want, "{class:?} {v}");
        }
    }
}
