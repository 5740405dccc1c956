//! Value parsers for the command line's numbers, durations, URLs and output paths: every value
//! is checked against a range when clap reads it, so no flag value can panic later (a
//! `Duration` built from `1e30` seconds, a 300-digit window) and each refusal says what the flag
//! takes.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest duration any flag takes: 30 days (seconds).
pub const MAX_DURATION_S: f64 = 30.0 * 86_400.0;

/// `10s`, `2m`, `1h`, `500ms`, or a bare number of seconds, as seconds.
fn seconds_of(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| "not a duration (use e.g. 10s, 2m, 1h, 500ms, or a number of seconds)")?;
    let secs = v * mult;
    if !secs.is_finite() {
        return Err("not a finite duration".into());
    }
    Ok(secs)
}

fn fmt_s(x: f64) -> String {
    if x >= 86_400.0 && (x / 86_400.0).fract() == 0.0 {
        format!("{} days", x / 86_400.0)
    } else if x >= 3600.0 && (x / 3600.0).fract() == 0.0 {
        format!("{} h", x / 3600.0)
    } else {
        format!("{x} s")
    }
}

/// A duration between `min_s` and `max_s` seconds (inclusive), as seconds.
///
/// # Errors
/// Not a number or a duration with a unit, not finite, or outside the range (the message gives
/// the range).
pub fn seconds_between(
    min_s: f64,
    max_s: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s| {
        let v = seconds_of(s)?;
        if v < min_s || v > max_s {
            return Err(format!(
                "must be between {} and {}",
                fmt_s(min_s),
                fmt_s(max_s)
            ));
        }
        Ok(v)
    }
}

/// A duration between `min_s` and `max_s` seconds, as a [`Duration`].
///
/// # Errors
/// As [`seconds_between`].
pub fn duration_between(
    min_s: f64,
    max_s: f64,
) -> impl Fn(&str) -> Result<Duration, String> + Clone + Send + Sync + 'static {
    let f = seconds_between(min_s, max_s);
    move |s| f(s).map(Duration::from_secs_f64)
}

/// A server base URL: `http://host[:port][/prefix]`.
///
/// # Errors
/// No scheme (says to add `http://`), another scheme than `http` (this build has no TLS), or
/// no host.
pub fn server_url(s: &str) -> Result<String, String> {
    let t = s.trim();
    let Some((scheme, rest)) = t.split_once("://") else {
        return Err(format!(
            "no scheme: add http:// (e.g. http://{t}); the URL is the server's base URL"
        ));
    };
    if scheme.eq_ignore_ascii_case("https") {
        return Err(
            "https is not supported by this build (no TLS); use http:// or a local TLS-terminating proxy"
                .into(),
        );
    }
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(format!("scheme {scheme}:// is not supported; use http://"));
    }
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    if host.is_empty() || host.starts_with(':') {
        return Err("no host after http://".into());
    }
    Ok(t.to_string())
}

/// A `--plot` path: SVG only.
///
/// # Errors
/// A path whose extension is not `.svg` (a `.png` would hold SVG text under the wrong name).
pub fn svg_path(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    match p.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") => Ok(p),
        Some(e) => Err(format!(
            "the plot is written as SVG, not .{e}; give a path ending in .svg (convert it afterwards, e.g. rsvg-convert -o x.png x.svg)"
        )),
        None => Err("the plot is written as SVG; give a path ending in .svg".into()),
    }
}

/// True when `p` means standard input (`-`), for a file the command reads.
pub fn is_stdin(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// True when `p` means standard output (`-`).
pub fn is_stdout(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// Checks, before any work, that `path` can be written: opens it for writing (creating it) and
/// removes it again when it did not exist, so a bad path fails in a second instead of after the
/// whole diagnosis.
///
/// # Errors
/// The path cannot be created or written (the message names the flag and the path).
pub fn check_writable(flag: &str, path: &Path) -> anyhow::Result<()> {
    if is_stdout(path) {
        return Ok(());
    }
    let existed = path.exists();
    if path.is_dir() {
        anyhow::bail!("{flag} {}: is a directory", path.display());
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| anyhow::anyhow!("{flag} {}: cannot write there: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Range of an `--expect` multiple of the measured steady rate (`0.01x` ..= `1000x`).
const EXPECT_MULTIPLE: std::ops::RangeInclusive<f64> = 0.01..=1000.0;
/// Range of an `--expect` rate (tok/s): a server is expected to make at least 1 tok/s.
const EXPECT_RATE: std::ops::RangeInclusive<f64> = 1.0..=1e9;
/// `--expect` completion rates (req/s): from one request a day to a million a second.
const EXPECT_REQ_RATE: std::ops::RangeInclusive<f64> = 1e-5..=1e6;

/// `--expect`: `4x` (a multiple of the measured steady rate, 0.01 to 1000) or `2500tok/s` /
/// `2500 tokens/s` (a generation rate in tok/s, 1 to 10^9). A number without its unit is
/// refused: users write `4` for "4x faster" and `2500` for a rate, and a wrong reading answers
/// another question; the error offers the readings that are in range.
///
/// # Errors
/// Not of either form, not finite, or out of range.
pub fn expectation(s: &str) -> Result<diagnosis::Expectation, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let forms = "give a multiple such as 4x, a rate such as 2500tok/s, or a completion rate such as 0.4req/s";
    if let Some(x) = lower
        .strip_suffix("req/s")
        .or_else(|| lower.strip_suffix("requests/s"))
    {
        let v: f64 = x.trim().parse().map_err(|_| format!("`{s}`: {forms}"))?;
        if !EXPECT_REQ_RATE.contains(&v) {
            return Err(format!(
                "`{s}`: must be between {} req/s and {} req/s",
                EXPECT_REQ_RATE.start(),
                EXPECT_REQ_RATE.end()
            ));
        }
        return Ok(diagnosis::Expectation::ReqPerS(v));
    }
    let (num, multiple) = if let Some(x) = lower.strip_suffix('x').or_else(|| t.strip_suffix('×'))
    {
        (x.trim().to_string(), true)
    } else if let Some(x) = lower
        .strip_suffix("tok/s")
        .or_else(|| lower.strip_suffix("tokens/s"))
    {
        (x.trim().to_string(), false)
    } else {
        let readings: Vec<String> = match t.parse::<f64>() {
            Ok(v) => [
                (EXPECT_MULTIPLE.contains(&v)).then(|| format!("{t}x (times the measured rate)")),
                (EXPECT_RATE.contains(&v)).then(|| format!("{t}tok/s")),
                (EXPECT_REQ_RATE.contains(&v)).then(|| format!("{t}req/s")),
            ]
            .into_iter()
            .flatten()
            .collect(),
            Err(_) => Vec::new(),
        };
        return Err(if readings.is_empty() {
            format!("`{s}`: {forms}")
        } else {
            format!(
                "`{s}`: a multiple or a rate? give {}",
                readings.join(" or ")
            )
        });
    };
    let v: f64 = num.parse().map_err(|_| format!("`{s}`: {forms}"))?;
    let range = if multiple {
        EXPECT_MULTIPLE
    } else {
        EXPECT_RATE
    };
    if !range.contains(&v) {
        let unit = if multiple { "x" } else { " tok/s" };
        return Err(format!(
            "`{s}`: must be between {}{unit} and {}{unit}",
            range.start(),
            range.end()
        ));
    }
    Ok(if multiple {
        diagnosis::Expectation::Multiple(v)
    } else {
        diagnosis::Expectation::TokPerS(v)
    })
}

/// Whether `a` and `b` name the same existing file (same device and inode; else the same
/// canonical path).
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

/// Read a side input (server info, model config, client file) of at most
/// `cap_bytes`; a longer one, or one that is not a regular file, is an error naming the flag.
/// `-` reads standard input (the caller lets at most one input name it).
///
/// # Errors
/// The file cannot be opened, is not a regular file, or is larger than the cap; standard
/// input cannot be read or holds more than the cap.
pub fn read_capped(flag: &str, path: &Path, cap_bytes: u64) -> anyhow::Result<Vec<u8>> {
    use std::io::Read as _;
    if is_stdin(path) {
        // `--client-log -`: what the client printed, piped in (`python client.py | tee /dev/stderr
        // | throughput-doctor diagnose server.log --client-log -`)
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .take(cap_bytes + 1)
            .read_to_end(&mut buf)
            .map_err(|e| anyhow::anyhow!("{flag} - (standard input): {e}"))?;
        anyhow::ensure!(
            buf.len() as u64 <= cap_bytes,
            "{flag} - (standard input): larger than {} MiB, more than such a file can hold",
            cap_bytes >> 20
        );
        return Ok(buf);
    }
    let f =
        std::fs::File::open(path).map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))?;
    let m = f
        .metadata()
        .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))?;
    anyhow::ensure!(
        m.is_file(),
        "{flag} {}: not a regular file (a device or FIFO is read forever)",
        path.display()
    );
    let mut buf = Vec::new();
    f.take(cap_bytes + 1)
        .read_to_end(&mut buf)
        .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))?;
    anyhow::ensure!(
        buf.len() as u64 <= cap_bytes,
        "{flag} {}: larger than {} MiB, more than such a file can hold",
        path.display(),
        cap_bytes >> 20
    );
    Ok(buf)
}

/// `text` safe to print on a terminal: control characters other than newline and tab (escape
/// sequences a server or file may carry: a window-title change, a screen clear, a carriage
/// return that overwrites the line) are shown as `\u{..}` escapes.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| {
                if c.is_control() && c != '\n' && c != '\t' {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// `text` safe to print as (part of) one line on a terminal: every control character but tab,
/// newline and carriage return included, is shown as a `\u{..}` escape, so that a file name
/// or a label cannot clear the screen or start a line of its own (a fake `Verdict:`).
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\t') {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| {
                if c.is_control() && c != '\t' {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn expectation_multiples_and_rates() {
        use diagnosis::Expectation;
        assert_eq!(super::expectation("4x"), Ok(Expectation::Multiple(4.0)));
        assert_eq!(
            super::expectation("2500tok/s"),
            Ok(Expectation::TokPerS(2500.0))
        );
        assert_eq!(
            super::expectation(" 2500 tokens/s "),
            Ok(Expectation::TokPerS(2500.0))
        );
        assert_eq!(super::expectation("4.5X"), Ok(Expectation::Multiple(4.5)));
        assert_eq!(
            super::expectation("0.4req/s"),
            Ok(Expectation::ReqPerS(0.4))
        );
        assert_eq!(
            super::expectation(" 2 requests/s"),
            Ok(Expectation::ReqPerS(2.0))
        );
        assert!(super::expectation("0req/s").is_err());
        assert!(super::expectation("fastreq/s").is_err());
        // a bare number has no unit: the readings in range are offered, neither is guessed;
        // values far too small to mean anything are refused, not answered as "0 tok/s"
        let asked = "a multiple or a rate? give";
        let forms = "give a multiple such as 4x, a rate such as 2500tok/s, or a completion rate such as 0.4req/s";
        for (input, message) in [
            (
                "4",
                format!("{asked} 4x (times the measured rate) or 4tok/s or 4req/s"),
            ),
            ("2500", format!("{asked} 2500tok/s or 2500req/s")),
            (
                "0.5",
                format!("{asked} 0.5x (times the measured rate) or 0.5req/s"),
            ),
            ("inf", forms.into()),
            ("NaN", forms.into()),
            ("0", forms.into()),
            ("1e300", forms.into()),
            ("-4", forms.into()),
            ("1e-300x", "must be between 0.01x and 1000x".into()),
            (
                "0.5tok/s",
                "must be between 1 tok/s and 1000000000 tok/s".into(),
            ),
        ] {
            assert_eq!(
                super::expectation(input),
                Err(format!("`{input}`: {message}"))
            );
        }
        for bad in ["inf", "NaNx", "0x", "-3x", "1e300", "fast"] {
            assert!(super::expectation(bad).is_err(), "{bad}");
        }
    }

    use super::*;

    #[test]
    fn durations_outside_their_range_are_refused_without_panicking() {
        let f = duration_between(0.01, MAX_DURATION_S);
        assert_eq!(f("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(f("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(f("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(f("1.5"), Ok(Duration::from_millis(1500)));
        for bad in [
            "99999999999999999999h",
            "1e300",
            "1e30s",
            "inf",
            "NaN",
            "-60",
            "0",
        ] {
            let e = f(bad).unwrap_err();
            assert!(
                e == "must be between 0.01 s and 30 days" || e == "not a finite duration",
                "{bad}: {e}"
            );
        }
        assert!(f("ten").unwrap_err().starts_with("not a duration"));
    }

    #[test]
    fn a_url_without_scheme_says_add_http() {
        assert_eq!(
            server_url("localhost:30000").unwrap_err(),
            "no scheme: add http:// (e.g. http://localhost:30000); the URL is the server's base URL"
        );
        assert!(server_url("https://x").unwrap_err().contains("no TLS"));
        assert_eq!(server_url("http://").unwrap_err(), "no host after http://");
        assert_eq!(
            server_url("http://127.0.0.1:30000").unwrap(),
            "http://127.0.0.1:30000"
        );
    }

    #[test]
    fn plot_paths_must_be_svg() {
        assert!(svg_path("x.png").unwrap_err().contains("not .png"));
        assert!(svg_path("x").is_err());
        assert_eq!(svg_path("out/X.SVG").unwrap(), PathBuf::from("out/X.SVG"));
    }
}

#[cfg(test)]
mod printable_tests {
    #[test]
    fn escape_sequences_are_shown_not_run() {
        assert_eq!(super::printable("plain\ttext\n"), "plain\ttext\n");
        let s = super::printable("\u{1b}]0;PWNED\u{7}\u{1b}[2J\rOVER");
        assert!(!s.contains('\u{1b}') && !s.contains('\r'), "{s}");
        assert!(s.contains("\\u{1b}]0;PWNED"), "{s}");
    }
}
