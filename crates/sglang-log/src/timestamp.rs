//! Log timestamps: `YYYY-MM-DD HH:MM:SS[.mmm|,mmm]`, ISO `YYYY-MM-DDTHH:MM:SS[.ffffff][Z]`,
//! and the date-less `HH:MM:SS` of SGLang v0.2.14 – v0.3.3.post1, as `nom` parsers.

use crate::grammar::{PResult, byte, byte_if, digit2, fail, str_tail};
use nom::Parser;
use nom::branch::alt;
use nom::character::complete::digit1;
use nom::combinator::{map_opt, opt, recognize};
use nom::sequence::preceded;

/// A timestamp as written in the log: the server's local wall clock, no time zone (SGLang's
/// `configure_logger` uses `datefmt="%Y-%m-%d %H:%M:%S"`, spec §1.1). Resolution is whatever the
/// line carries: seconds by default, milliseconds with `SGLANG_LOG_MS=1`, microseconds in ISO
/// stamps.
///
/// Ordering compares date first (date-less stamps sort before dated ones), then time of day.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp {
    /// Days since 1970-01-01 (proleptic Gregorian), `None` for a time-only stamp.
    days: Option<i32>,
    /// Seconds since midnight, 0 ..= 86_399 (a leap second `:60` is kept as 86_400).
    secs_of_day: u32,
    /// Nanoseconds within the second.
    nanos: u32,
    /// The stamp ended in `Z` (UTC, e.g. `docker logs -t`), unlike SGLang's own local stamps.
    utc: bool,
}

impl Timestamp {
    /// Seconds since 1970-01-01 00:00:00 of the server's local clock (no time zone is applied)
    /// when the line has a date; otherwise seconds since midnight. Unit: seconds, with the
    /// fraction the line carries.
    pub fn seconds(&self) -> f64 {
        let day = f64::from(self.days.unwrap_or(0)) * 86_400.0;
        day + f64::from(self.secs_of_day) + f64::from(self.nanos) * 1e-9
    }

    /// Whether the stamp had a date (`YYYY-MM-DD`); `false` for `[HH:MM:SS TP0]` lines.
    pub fn has_date(&self) -> bool {
        self.days.is_some()
    }

    /// Days since 1970-01-01, if the stamp had a date.
    pub fn days_since_epoch(&self) -> Option<i32> {
        self.days
    }

    /// The calendar date `(year, month 1-12, day 1-31)`, if the stamp had one.
    pub fn date(&self) -> Option<(i32, u32, u32)> {
        self.days.map(civil_from_days)
    }

    /// Time of day `(hour, minute, second)`.
    pub fn time_of_day(&self) -> (u32, u32, u32) {
        (
            self.secs_of_day / 3600,
            (self.secs_of_day / 60) % 60,
            self.secs_of_day % 60,
        )
    }

    /// Nanoseconds within the second (0 unless the line had a fraction).
    pub fn subsec_nanos(&self) -> u32 {
        self.nanos
    }

    /// Whether the stamp was marked UTC with a trailing `Z` (container runtimes' stamps); SGLang's
    /// own stamps are local time and never carry it.
    pub fn is_utc(&self) -> bool {
        self.utc
    }

    /// Builds a timestamp from a calendar date and a time of day (local clock, no zone).
    /// Returns `None` for an impossible date or time.
    pub fn from_ymd_hms(
        y: i32,
        mo: u32,
        d: u32,
        h: u32,
        mi: u32,
        s: u32,
        nanos: u32,
    ) -> Option<Self> {
        if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) {
            return None;
        }
        let mut t = Self::from_hms(h, mi, s, nanos)?;
        t.days = Some(days_from_civil(y, mo, d));
        Some(t)
    }

    /// Builds a date-less timestamp (seconds since midnight). `None` for an impossible time.
    pub fn from_hms(h: u32, mi: u32, s: u32, nanos: u32) -> Option<Self> {
        if h > 23 || mi > 59 || s > 60 || nanos >= 1_000_000_000 {
            return None;
        }
        Some(Timestamp {
            days: None,
            secs_of_day: h * 3600 + mi * 60 + s,
            nanos,
            utc: false,
        })
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some((y, m, d)) = self.date() {
            write!(f, "{y:04}-{m:02}-{d:02} ")?;
        }
        let (h, mi, s) = self.time_of_day();
        write!(f, "{h:02}:{mi:02}:{s:02}")?;
        if self.nanos != 0 {
            write!(f, ".{:03}", self.nanos / 1_000_000)?;
        }
        if self.utc {
            f.write_str("Z")?;
        }
        Ok(())
    }
}

fn is_leap(y: i32) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(y: i32, m: u32, d: u32) -> i32 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = m as i32;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i32 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`].
fn civil_from_days(z: i32) -> (i32, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[inline]
fn d2(b: &[u8], i: usize) -> Option<u32> {
    let a = b.get(i)?.wrapping_sub(b'0');
    let c = b.get(i + 1)?.wrapping_sub(b'0');
    if a > 9 || c > 9 {
        return None;
    }
    Some(u32::from(a) * 10 + u32::from(c))
}

/// `.f` / `,f`: a fraction of a second (1 or more digits; the first 9 count). Returns
/// nanoseconds.
fn fraction(i: &[u8]) -> PResult<'_, u32> {
    preceded(alt((byte(b'.'), byte(b','))), digit1)
        .map(|d: &[u8]| {
            let k = d.len().min(9);
            let n = d[..k]
                .iter()
                .fold(0u32, |n, c| n * 10 + u32::from(c - b'0'));
            // ok: k <= 9
            n * 10u32.pow(9 - k as u32)
        })
        .parse(i)
}

/// `HH:MM:SS` plus an optional fraction and an optional `Z`, not followed by a digit (so
/// `12:00:001` is no stamp). The value is date-less.
fn time_of_day(i: &[u8]) -> PResult<'_, Timestamp> {
    let (rest, (h, _, mi, _, s, nanos, z)) = (
        digit2,
        byte(b':'),
        digit2,
        byte(b':'),
        digit2,
        opt(fraction),
        opt(byte(b'Z')),
    )
        .parse(i)?;
    if rest.first().is_some_and(u8::is_ascii_digit) {
        return fail();
    }
    let mut t = Timestamp::from_hms(h, mi, s, nanos.unwrap_or(0)).ok_or(nom::Err::Error(()))?;
    t.utc = z.is_some();
    Ok((rest, t))
}

/// `YYYY-MM-DD` as days since 1970-01-01 (an impossible date fails).
fn date(i: &[u8]) -> PResult<'_, i32> {
    map_opt(
        recognize((digit2, digit2, byte(b'-'), digit2, byte(b'-'), digit2)),
        date_days,
    )
    .parse(i)
}

/// `YYYY-MM-DD` + one of `seps` + [`time_of_day`].
fn dated<'a>(seps: &'static [u8]) -> impl Parser<&'a [u8], Output = Timestamp, Error = ()> {
    (date, byte_if(move |c| seps.contains(&c)), time_of_day).map(|(days, _, t)| Timestamp {
        days: Some(days),
        ..t
    })
}

/// Any stamp form: `YYYY-MM-DD[ T]HH:MM:SS[.f|,f][Z]` or `HH:MM:SS[.f][Z]`.
pub(crate) fn timestamp(i: &[u8]) -> PResult<'_, Timestamp> {
    alt((dated(b" T"), time_of_day)).parse(i)
}

/// The ISO form with the `T` separator only (`2025-10-20T03:02:22.123Z`): a container
/// runtime's or a tracing subscriber's stamp.
pub(crate) fn iso_t_timestamp(i: &[u8]) -> PResult<'_, Timestamp> {
    dated(b"T").parse(i)
}

thread_local! {
    /// The last date seen (`YYYY-MM-DD` as a little-endian word + 2 bytes) and its day number:
    /// consecutive log lines almost always share the date, so the calendar math runs once a day.
    static LAST_DATE: std::cell::Cell<(u64, u16, i32)> = const { std::cell::Cell::new((0, 0, 0)) };
}

/// Days since 1970-01-01 of the `YYYY-MM-DD` at the start of `b` (at least 10 bytes), `None`
/// for an invalid date.
#[inline]
fn date_days(b: &[u8]) -> Option<i32> {
    let head: &[u8; 10] = b.first_chunk()?;
    let lo = u64::from_le_bytes([
        head[0], head[1], head[2], head[3], head[4], head[5], head[6], head[7],
    ]);
    let hi = u16::from_le_bytes([head[8], head[9]]);
    let (clo, chi, cdays) = LAST_DATE.get();
    // the cache starts as (0, 0, _), which no date matches (a date has no NUL bytes)
    if clo == lo && chi == hi {
        return Some(cdays);
    }
    let y = d2(b, 0)? * 100 + d2(b, 2)?;
    let mo = d2(b, 5)?;
    let d = d2(b, 8)?;
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y as i32, mo) {
        return None;
    }
    let days = days_from_civil(y as i32, mo, d);
    LAST_DATE.set((lo, hi, days));
    Some(days)
}

/// Parses a timestamp at the start of `s` ([`timestamp`]). Returns the timestamp and the
/// rest of the input after it.
pub(crate) fn parse_timestamp(s: &str) -> Option<(Timestamp, &str)> {
    let (rest, t) = timestamp(s.as_bytes()).ok()?;
    Some((t, str_tail(s, rest)))
}

/// Parses exactly `YYYY-MM-DD HH:MM:SS` (SGLang's default stamp, 19 bytes): the same value as
/// [`parse_timestamp`] gives for these bytes followed by a space or `]`, with fixed offsets.
#[inline]
pub(crate) fn parse_stamp19(b: &[u8; 19]) -> Option<Timestamp> {
    if b[4] != b'-' || b[7] != b'-' || b[10] != b' ' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let t = Timestamp::from_hms(d2(b, 11)?, d2(b, 14)?, d2(b, 17)?, 0)?;
    Some(Timestamp {
        days: Some(date_days(b)?),
        ..t
    })
}

/// [`parse_stamp19`] of `b` given the stamp `prev` parsed from `prev_b`: when only the seconds
/// differ (the usual case from one line to the next), two digits are read instead of the whole
/// stamp; the value is the one [`parse_stamp19`] gives.
#[inline]
pub(crate) fn parse_stamp19_after(
    prev_b: &[u8; 19],
    prev: Timestamp,
    b: &[u8; 19],
) -> Option<Timestamp> {
    if b[..17] != prev_b[..17] {
        return parse_stamp19(b);
    }
    let (s, old) = (d2(b, 17)?, d2(prev_b, 17)?);
    if s > 60 {
        return None;
    }
    Some(Timestamp {
        secs_of_day: prev.secs_of_day - old + s,
        ..prev
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_after_a_stamp_is_the_stamp() {
        let stamps = [
            "2026-01-15 08:00:00",
            "2026-01-15 08:00:59",
            "2026-01-15 08:00:60",
            "2026-01-15 08:00:61",
            "2026-01-15 08:00:5x",
            "2026-01-15 08:01:07",
            "2026-01-16 08:01:07",
            "2026-01-16 23:59:09",
            "2026-02-30 23:59:09",
        ];
        for a in stamps {
            let ab: &[u8; 19] = a.as_bytes().try_into().unwrap();
            let Some(pa) = parse_stamp19(ab) else {
                continue;
            };
            for b in stamps {
                let bb: &[u8; 19] = b.as_bytes().try_into().unwrap();
                assert_eq!(
                    parse_stamp19_after(ab, pa, bb),
                    parse_stamp19(bb),
                    "{a} {b}"
                );
            }
        }
    }

    #[test]
    fn epoch_math() {
        let (t, rest) = parse_timestamp("2025-06-01 12:00:00 TP0").unwrap();
        assert_eq!(rest, " TP0");
        assert_eq!(t.seconds(), 1_748_779_200.0);
        assert_eq!(t.date(), Some((2025, 6, 1)));
        assert!(t.has_date());
        let (t, _) = parse_timestamp("1970-01-01 00:00:01.5").unwrap();
        assert_eq!(t.seconds(), 1.5);
        let (t, _) = parse_timestamp("2024-12-10 09:13:58,650]").unwrap();
        assert_eq!(t.subsec_nanos(), 650_000_000);
        let (t, rest) = parse_timestamp("14:03:11 TP0]").unwrap();
        assert!(!t.has_date());
        assert_eq!(t.seconds(), 14.0 * 3600.0 + 3.0 * 60.0 + 11.0);
        assert_eq!(rest, " TP0]");
        let (t, rest) = parse_timestamp("2025-07-10T08:01:02.123456Z x").unwrap();
        assert!(t.is_utc());
        assert_eq!(t.subsec_nanos(), 123_456_000);
        assert_eq!(rest, " x");
        assert!(parse_timestamp("2025-02-30 10:00:00").is_none());
        // the date cache: same date twice, then another, then the first again
        let a = parse_timestamp("2024-02-29 10:00:00").unwrap().0;
        let b = parse_timestamp("2024-02-29 11:00:00").unwrap().0;
        assert_eq!(b.seconds() - a.seconds(), 3600.0);
        assert_eq!(
            parse_timestamp("2024-03-01 10:00:00").unwrap().0.date(),
            Some((2024, 3, 1))
        );
        assert_eq!(parse_timestamp("2024-02-29 10:00:00").unwrap().0, a);
        assert!(parse_timestamp("2023-02-29 10:00:00").is_none());
        assert!(parse_timestamp("25:00:00").is_none());
        assert!(parse_timestamp("025-06-23 18:55:20").is_none());
        for days in [-1000, 0, 1, 19_000, 20_500, 60_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(t.to_string(), "2025-07-10 08:01:02.123Z");
        // the fixed-offset form agrees with the general parser, and rejects what it rejects
        for s in [
            "2025-06-01 12:00:00",
            "2024-02-29 23:59:60",
            "2023-02-29 10:00:00",
            "2025-06-01 24:00:00",
            "2025-13-01 12:00:00",
            "2025-06-01 12:0a:00",
        ] {
            let b: &[u8; 19] = s.as_bytes().try_into().unwrap();
            assert_eq!(parse_stamp19(b), parse_timestamp(s).map(|(t, _)| t), "{s}");
        }
        // only SGLang's own form: the ISO `T` form goes the general way
        assert_eq!(parse_stamp19(b"2025-06-01T12:00:00"), None);
    }
}
