//! A client's progress log: lines that start with a date-time and count completed requests.

use super::ProgressPoint;

/// Parse `YYYY-MM-DD[ T]HH:MM:SS[.fff][Z]` at the start of `s` into seconds (log clock), and the
/// number of bytes it used.
pub fn parse_datetime_prefix(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    if b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b' ' || b[10] == b'T')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d, h, mi, se) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    let mut used = 19;
    let mut frac = 0.0;
    if b.len() > 20 && (b[19] == b'.' || b[19] == b',') {
        let digits = b[20..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 {
            frac = s
                .get(19..20 + digits)
                .and_then(|x| format!("0{}", x).replace(',', ".").parse::<f64>().ok())
                .unwrap_or(0.0);
            used = 20 + digits;
        }
    }
    if b.get(used) == Some(&b'Z') {
        used += 1;
    }
    let ts = crate::Timestamp::from_ymd_hms(y as i32, mo, d, h, mi, se, 0)?;
    Some((ts.seconds() + frac, used))
}

/// The date-time a progress line starts with, and the rest of the line: bare or in square
/// brackets (`[2026-02-10 14:14:30]`), the forms [`parse_datetime_prefix`] reads.
pub(super) fn progress_time(line: &str) -> Option<(f64, &str)> {
    let line = line.trim_start();
    let (inner, bracket) = match line.strip_prefix('[') {
        Some(r) => (r, true),
        None => (line, false),
    };
    let (t, used) = parse_datetime_prefix(inner)?;
    let rest = inner.get(used..)?;
    let rest = if bracket {
        rest.strip_prefix(']')?
    } else {
        rest
    };
    Some((t, rest))
}

/// The numbers of a line as `(start, end, value)` byte ranges: runs of digits with at most one
/// decimal point, not glued to a letter before them (`v2`, `x86` are names, not numbers).
fn numbers(s: &str) -> impl Iterator<Item = (usize, usize, &str)> {
    let b = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            if b[i].is_ascii_digit()
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.'))
            {
                let start = i;
                let mut dot = false;
                while i < b.len()
                    && (b[i].is_ascii_digit()
                        || (b[i] == b'.' && !dot && i + 1 < b.len() && b[i + 1].is_ascii_digit()))
                {
                    dot |= b[i] == b'.';
                    i += 1;
                }
                return Some((start, i, &s[start..i]));
            }
            i += 1;
        }
        None
    })
}

/// Whether `unit` (after optional spaces) follows byte `at` of `s`, as a whole word.
fn unit_after(s: &str, at: usize, units: &[&str]) -> bool {
    let rest = s[at..].trim_start();
    units.iter().any(|u| {
        rest.strip_prefix(u)
            .is_some_and(|r| r.chars().next().is_none_or(|c| !c.is_ascii_alphanumeric()))
    })
}

/// The completed-request count of a progress line: its first `N/M` (both whole numbers,
/// `0 < M`, `N ≤ M`; a first pair that breaks this makes no count), else, without any `N/M`,
/// `N done` / `N completed` / `done: N`.
fn progress_count(rest: &str) -> Option<(u64, Option<u64>)> {
    let nums: Vec<(usize, usize, &str)> = numbers(rest).collect();
    if let Some(w) = nums
        .windows(2)
        .find(|w| w[1].0 == w[0].1 + 1 && rest.as_bytes()[w[0].1] == b'/')
    {
        let (n, m) = (w[0].2.parse::<u64>().ok()?, w[1].2.parse::<u64>().ok()?);
        return (m > 0 && n <= m).then_some((n, Some(m)));
    }
    nums.iter().find_map(|&(start, end, v)| {
        let n = v.parse::<u64>().ok()?;
        let before = rest[..start].trim_end();
        (unit_after(
            rest,
            end,
            &["done", "completed", "finished", "requests done"],
        ) || before.ends_with("done:")
            || before.ends_with("completed:"))
        .then_some((n, None))
    })
}

/// The first number of `rest` followed by one of `units` (a printed rate).
fn printed_rate(rest: &str, units: &[&str]) -> Option<f64> {
    numbers(rest).find_map(|(_, end, v)| {
        unit_after(rest, end, units)
            .then(|| v.parse::<f64>().ok())
            .flatten()
            .filter(|x| x.is_finite() && *x >= 0.0)
    })
}

/// Whether `line` counts completed requests as a progress line does (`progress_count`) but
/// does not start with a date-time: the count is there, the time to set it against the server
/// log's clock is not (`129/11000 done, 0.1 req/s`, `14:14:30 129/11000 done`).
pub fn progress_without_time(line: &str) -> bool {
    progress_time(line).is_none() && progress_count(line).is_some()
}

/// Whether `line` (surrounding spaces allowed) is a client's progress line as
/// [`super::parse_client`] reads one: a date-time, then a count of completed requests (`N/M done`).
/// Lets a reader tell a progress log while it reads it, line by line, with no second read.
pub fn is_progress_line(line: &str) -> bool {
    progress_from_line(line.trim()).is_some()
}

/// A progress line: a date-time, a count of completed requests ([`progress_count`]), and the
/// rates the client printed (`X req/s`, `X it/s` of a progress bar counting requests, `X
/// tok/s`), the mean completion length when printed (`avg_comp=4121tok`).
pub(super) fn progress_from_line(line: &str) -> Option<ProgressPoint> {
    let (t, rest) = progress_time(line)?;
    let (done, total) = progress_count(rest)?;
    let printed = printed_rate(rest, &["req/s", "reqs/s", "requests/s", "it/s"]);
    let printed_tok = printed_rate(rest, &["tok/s", "tokens/s", "token/s"]);
    // `avg_comp=4121tok` (or `avg_comp=4121`, `avg_comp: 4121 tokens`)
    let avg_comp = rest.find("avg_comp").and_then(|i| {
        let v = rest[i + "avg_comp".len()..].trim_start_matches([' ', '=', ':']);
        crate::num::leading_f64(v).filter(|x| *x > 0.0)
    });
    Some(ProgressPoint {
        t,
        done,
        total,
        printed_req_per_s: printed,
        printed_tok_per_s: printed_tok,
        mean_completion_tokens: avg_comp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line() {
        let p = progress_from_line("2026-02-10 15:59:36 [B2_opencodeinstruct] 1005/11000 done, 0.1 req/s, avg_comp=4121tok, ETA=19.8h").expect("parsed");
        assert_eq!(p.done, 1005);
        assert_eq!(p.total, Some(11000));
        assert_eq!(p.printed_req_per_s, Some(0.1));
        assert_eq!(p.mean_completion_tokens, Some(4121.0));
        let p = progress_from_line("2026-02-10 15:59:36 [x] 3/10 done, avg_comp: 17 tokens")
            .expect("parsed");
        assert_eq!(p.mean_completion_tokens, Some(17.0));
        // a malformed figure is no figure
        let p =
            progress_from_line("2026-02-10 15:59:36 [x] 3/10 done, avg_comp=?tok").expect("parsed");
        assert_eq!(p.mean_completion_tokens, None);
        let t0 = parse_datetime_prefix("2026-02-10 00:00:00").expect("t").0;
        assert_eq!(p.t - t0, 15.0 * 3600.0 + 59.0 * 60.0 + 36.0);
    }

    /// The progress lines a new user's own client printed (the fresh-user trial of
    /// 2026-12-03): brackets round the time, a logger's level, `Progress:`, `completed`,
    /// `Processed`, a progress bar's `it/s`, the token rate.
    #[test]
    fn progress_lines_as_scripts_print_them() {
        let t0 = parse_datetime_prefix("2026-02-10 14:14:30").expect("t").0;
        // line, done, total, printed req/s, printed tok/s
        type Case<'a> = (&'a str, u64, Option<u64>, Option<f64>, Option<f64>);
        let cases: &[Case<'_>] = &[
            (
                "[2026-02-10 14:14:30] 129/11000 done, 0.1 req/s, 500 tok/s",
                129,
                Some(11000),
                Some(0.1),
                Some(500.0),
            ),
            (
                "2026-02-10 14:14:30 INFO Progress: 129/11000 (0.1 req/s, 500 tok/s)",
                129,
                Some(11000),
                Some(0.1),
                Some(500.0),
            ),
            (
                "2026-02-10 14:14:30 completed 129/11000, 0.1 req/s",
                129,
                Some(11000),
                Some(0.1),
                None,
            ),
            (
                "2026-02-10 14:14:30,123 INFO Processed 129/11000 requests | 0.1 req/s | 500 tokens/s",
                129,
                Some(11000),
                Some(0.1),
                Some(500.0),
            ),
            (
                "2026-02-10T14:14:30 Generating:   1%| | 129/11000 [14:30<20:25:00,  0.15it/s]",
                129,
                Some(11000),
                Some(0.15),
                None,
            ),
            ("2026-02-10 14:14:30 [B2] 129 done", 129, None, None, None),
            ("2026-02-10 14:14:30 done: 129", 129, None, None, None),
        ];
        for &(line, done, total, req, tok) in cases {
            let p = progress_from_line(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(
                (p.done, p.total, p.printed_req_per_s, p.printed_tok_per_s),
                (done, total, req, tok),
                "{line}"
            );
            assert!((p.t - t0).abs() < 0.2, "{line}: {}", p.t - t0);
        }
        assert!(progress_without_time(
            "129/11000 done, 0.1 req/s, 500 tok/s"
        ));
        assert!(progress_without_time("14:14:30 129/11000 done, 0.1 req/s"));
        assert!(!progress_without_time(
            "[2026-02-10 14:14:30] 129/11000 done"
        ));
        assert!(!progress_without_time("starting the job"));
        // no date-time, a time of day alone, a count above its total, a bracket not closed,
        // a count glued to a name: not a progress point
        for line in [
            "129/11000 done, 0.1 req/s, 500 tok/s",
            "14:14:30 129/11000 done, 0.1 req/s",
            "2026-02-10 14:14:30 12000/11000 done",
            "[2026-02-10 14:14:30 129/11000 done",
            "2026-02-10 14:14:30 loaded model v2/3",
        ] {
            assert_eq!(progress_from_line(line), None, "{line}");
        }
    }
}
