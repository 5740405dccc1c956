//! Times as the Prometheus HTTP API writes them.

/// A time as the Prometheus HTTP API writes one (`start`, `end`, `time`): Unix seconds
/// (`1764576000`, `1764576000.5`; 0 to 10^11), or RFC 3339
/// (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`; `t` or a space for `T`, `z` for `Z`). Returns Unix
/// seconds. A leap second (`:60`) is read as the next minute's first second.
///
/// Errors: neither form (the message says which forms are read).
pub fn parse_time(s: &str) -> Result<f64, String> {
    let s = s.trim();
    if let Ok(v) = s.parse::<f64>() {
        if v.is_finite() && (0.0..1e11).contains(&v) {
            return Ok(v);
        }
        return Err(format!("{s}: not a Unix time in seconds"));
    }
    let bad = || format!("{s:?}: not a Unix time nor RFC 3339 (2026-12-01T08:00:00Z)");
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<i64>().ok());
    let (y, mo, d, h, mi, se) = (
        num(0..4).ok_or_else(bad)?,
        num(5..7).ok_or_else(bad)?,
        num(8..10).ok_or_else(bad)?,
        num(11..13).ok_or_else(bad)?,
        num(14..16).ok_or_else(bad)?,
        num(17..19).ok_or_else(bad)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return Err(bad());
    }
    let mut rest = &s[19..];
    let mut frac = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        frac = format!("0.{}", &r[..n]).parse().map_err(|_| bad())?;
        rest = &r[n..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let hh: i64 = o[1..3].parse().map_err(|_| bad())?;
            let mm: i64 = o[4..6].parse().map_err(|_| bad())?;
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (hh * 3600 + mm * 60)
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(y, mo, d);
    Ok((days * 86_400 + h * 3600 + mi * 60 + se - offset_s) as f64 + frac)
}

/// Days from 1970-01-01 to the civil date `y-m-d` (proleptic Gregorian; negative before
/// 1970), after H. Hinnant's `days_from_civil`. `m` is 1-12, `d` 1-31 (not checked against
/// the month's length: 02-31 is 03-03, as the arithmetic gives).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let (yy, mp) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_and_unix_times() {
        assert_eq!(parse_time("0").unwrap(), 0.0);
        assert_eq!(parse_time("1764576000").unwrap(), 1_764_576_000.0);
        assert_eq!(parse_time("2025-12-01T08:00:00Z").unwrap(), 1_764_576_000.0);
        assert_eq!(
            parse_time("2025-12-01T09:30:00.5+01:30").unwrap(),
            1_764_576_000.5
        );
        assert_eq!(parse_time("2025-12-01 08:00:00z").unwrap(), 1_764_576_000.0);
        assert_eq!(parse_time("1970-01-01T00:00:00-00:30").unwrap(), 1800.0);
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("1e300").is_err());
        assert!(parse_time("2025-13-01T00:00:00Z").is_err());
        assert!(parse_time("2025-12-01T08:00:00").is_err());
    }

    #[test]
    fn civil_days_across_leap_years_and_eras() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        // 2000 is a leap year (divisible by 400), 2100 is not
        assert_eq!(
            days_from_civil(2000, 3, 1) - days_from_civil(2000, 2, 28),
            2
        );
        assert_eq!(
            days_from_civil(2100, 3, 1) - days_from_civil(2100, 2, 28),
            1
        );
        assert_eq!(
            days_from_civil(2024, 2, 29) + 1,
            days_from_civil(2024, 3, 1)
        );
    }
}
