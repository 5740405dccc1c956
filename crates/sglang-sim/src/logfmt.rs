//! UTC timestamps in SGLang's log prefix format, without a date crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// `YYYY-MM-DD HH:MM:SS` (UTC) for a Unix time in seconds.
pub fn format_utc(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Civil-from-days (proleptic Gregorian), after H. Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// The current UTC time in that format.
pub fn now() -> String {
    let s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_utc(s)
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_dates() {
        assert_eq!(super::format_utc(0), "1970-01-01 00:00:00");
        // 2026-02-10 14:00:00 UTC
        assert_eq!(super::format_utc(1_770_732_000), "2026-02-10 14:00:00");
        assert_eq!(super::format_utc(951_782_400), "2000-02-29 00:00:00");
    }
}
