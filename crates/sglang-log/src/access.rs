//! Requests the server turned away: uvicorn's access lines with their HTTP status, and SGLang's
//! context-length rejections.
//!
//! - Access line (uvicorn, printed by SGLang's HTTP server for every request):
//!   `INFO:     127.0.0.1:44946 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request`.
//! - Context-length rejections (`tokenizer_manager.py` `_validate_one_request`, returned to the
//!   client as HTTP 400 and printed where the server logs the error):
//!   - `The input (N tokens) is longer than the model's context length (M tokens).`
//!   - `Requested token count exceeds the model's maximum context length of M tokens. You
//!     requested a total of T tokens: I tokens from the input messages and O tokens for the
//!     completion. …`
//!
//! Both parsers are nom grammars over the message bytes; neither allocates.

use memchr::memmem;
use nom::bytes::complete::tag;
#[cfg(any(test, feature = "grammar-check"))]
use nom::bytes::complete::{take_till1, take_while1};
#[cfg(any(test, feature = "grammar-check"))]
use nom::character::complete::space1;
use nom::character::complete::{char, digit1, space0};
use nom::combinator::{map_res, opt};
use nom::sequence::delimited;
#[cfg(any(test, feature = "grammar-check"))]
use nom::sequence::preceded;
use nom::{IResult, Parser};
use std::sync::LazyLock;

/// One uvicorn access line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpAccess<'a> {
    /// The HTTP method (`POST`, `GET`).
    pub method: &'a str,
    /// The request path, query included (`/v1/chat/completions`).
    pub path: &'a str,
    /// The response status (400).
    pub status: u16,
}

impl HttpAccess<'_> {
    /// Whether the path is one of SGLang's generation endpoints (`/generate`,
    /// `/v1/completions`, `/v1/chat/completions`, …), not a health or metrics probe.
    pub fn is_generation(&self) -> bool {
        let p = self.path.split('?').next().unwrap_or(self.path);
        matches!(
            p,
            "/generate" | "/v1/completions" | "/v1/chat/completions" | "/v1/responses"
        )
    }
}

type Res<'a, T> = IResult<&'a [u8], T>;

fn utf8(b: &[u8]) -> Option<&str> {
    std::str::from_utf8(b).ok()
}

fn number(i: &[u8]) -> Res<'_, u64> {
    map_res(digit1, |d: &[u8]| {
        utf8(d)
            .ok_or(())
            .and_then(|s| s.parse::<u64>().map_err(|_| ()))
    })
    .parse(i)
}

/// `[INFO:     ]HOST:PORT - "METHOD PATH HTTP/x.y" STATUS …` (the level is gone when the
/// line parser has stripped it: [`crate::Record::message`]).
#[cfg(any(test, feature = "grammar-check"))]
fn access(i: &[u8]) -> Res<'_, (&[u8], &[u8], u64)> {
    let (i, _) = opt((tag(&b"INFO:"[..]), space1)).parse(i)?;
    let (i, _) = take_till1(|c| c == b' ' || c == b'"').parse(i)?;
    let (i, _) = tag(&b" - \""[..]).parse(i)?;
    let (i, method) = take_while1(|c: u8| c.is_ascii_uppercase()).parse(i)?;
    let (i, path) = preceded(char(' '), take_till1(|c| c == b' ' || c == b'"')).parse(i)?;
    let (i, _) = (
        char(' '),
        tag(&b"HTTP/"[..]),
        take_till1(|c| c == b'"'),
        char('"'),
        space1,
    )
        .parse(i)?;
    let (i, status) = number(i)?;
    Ok((i, (method, path, status)))
}

/// The first space or `"` in `b` from `i` on (`b.len()` when none): eight bytes a step
/// (the peer and the path are 10 - 40 bytes; a `memchr2` call costs more than the scan).
#[inline]
fn space_or_quote(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(c) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        // bytes equal to ' ' or '"' become zero; a zero byte sets its high bit below
        let (x, y) = (w ^ (ONES * u64::from(b' ')), w ^ (ONES * u64::from(b'"')));
        let found = (x.wrapping_sub(ONES) & !x | y.wrapping_sub(ONES) & !y) & HIGH;
        if found != 0 {
            // the lowest flagged byte is a true match (borrows only run upwards)
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && b[i] != b' ' && b[i] != b'"' {
        i += 1;
    }
    i
}

/// The access line of `msg` (the message after the envelope, with or without its `INFO:`
/// level), if it is one.
///
/// A hand-written scan of `access`'s grammar (the grammar of record, which the tests
/// compare it with line for line): one pass, no combinator frames, about half the grammar's
/// instructions (~530 instead of ~990 an access line on the seed-7 sample, where access lines
/// are 12 % of the lines).
pub fn parse_http_access(msg: &str) -> Option<HttpAccess<'_>> {
    let b = msg.as_bytes();
    let n = b.len();
    // index loops: the bytes of one short line, each looked at once
    let blanks = |mut i: usize| {
        while i < n && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        i
    };
    // `INFO:` and blanks, or nothing (the optional level is all or nothing)
    let mut i = 0;
    if b.starts_with(b"INFO:") {
        let j = blanks(5);
        if j > 5 {
            i = j;
        }
    }
    // the peer: one or more bytes up to a space or a quote, then ` - "`
    let h0 = i;
    i = space_or_quote(b, i);
    if i == h0 || !b[i..].starts_with(b" - \"") {
        return None;
    }
    i += 4;
    let m0 = i;
    while i < n && b[i].is_ascii_uppercase() {
        i += 1;
    }
    let m1 = i;
    if m1 == m0 || i >= n || b[i] != b' ' {
        return None;
    }
    i += 1;
    let p0 = i;
    i = space_or_quote(b, i);
    let p1 = i;
    if p1 == p0 || !b[i..].starts_with(b" HTTP/") {
        return None;
    }
    i += 6;
    let v0 = i;
    while i < n && b[i] != b'"' {
        i += 1;
    }
    if i == v0 || i >= n {
        return None; // no version, or no closing quote
    }
    let j = blanks(i + 1);
    if j == i + 1 {
        return None;
    }
    let d0 = j;
    let mut d1 = j;
    while d1 < n && b[d1].is_ascii_digit() {
        d1 += 1;
    }
    // the grammar reads the digits as one u64, leading zeros and all (`000…153` is 153)
    let status = access_status(&b[d0..d1])?;
    Some(HttpAccess {
        // ok: every bound is next to an ASCII byte of `msg`, so a char boundary
        method: msg.get(m0..m1)?,
        path: msg.get(p0..p1)?,
        status,
    })
}

/// The status of an access line from its run of digits (possibly empty): the grammar reads
/// them as one u64, leading zeros and all (`000…153` is 153), and a status is 100 - 599.
#[inline]
pub(crate) fn access_status(digits: &[u8]) -> Option<u16> {
    // the usual status: three digits, the first 1 to 5 (100 - 599 whatever the others), read
    // without the count of leading zeros and the general parse (~40 instructions a line)
    if let &[a @ b'1'..=b'5', b, c] = digits
        && b.is_ascii_digit()
        && c.is_ascii_digit()
    {
        return Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'));
    }
    let zeros = digits.iter().take_while(|&&c| c == b'0').count();
    let significant = match &digits[zeros.min(digits.len().saturating_sub(1))..] {
        [] => return None,
        d => d,
    };
    let status = crate::num::parse_u64_bytes(significant)?;
    u16::try_from(status)
        .ok()
        .filter(|s| (100..600).contains(s))
}

/// [`parse_http_access`] by the grammar of record.
#[cfg(any(test, feature = "grammar-check"))]
pub(crate) fn parse_http_access_grammar(msg: &str) -> Option<HttpAccess<'_>> {
    let (_, (method, path, status)) = access(msg.as_bytes()).ok()?;
    Some(HttpAccess {
        method: utf8(method)?,
        path: utf8(path)?,
        status: u16::try_from(status)
            .ok()
            .filter(|s| (100..600).contains(s))?,
    })
}

/// The access line of `msg`, as [`parse_http_access`], when its status is an error (400–599).
///
/// Most access lines are `200 OK`, and this runs on every plain line of a log: a screen on the
/// bytes comes first. The status follows a `"` and spaces or tabs (the grammar's `"` then
/// `space1`), so a line in which no `"` is followed by blanks and a `4` or `5` (after any
/// leading zeros) holds no error status, and the grammar is not run on it.
pub fn parse_http_error(msg: &str) -> Option<HttpAccess<'_>> {
    let b = msg.as_bytes();
    let maybe = memchr::memchr_iter(b'"', b).any(|q| {
        let after = &b[q + 1..];
        let blanks = after
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
        // (leading zeros are digits of the grammar's number: `0400` is 400)
        let zeros = after[blanks..].iter().take_while(|&&c| c == b'0').count();
        blanks > 0 && matches!(after.get(blanks + zeros), Some(b'4' | b'5'))
    });
    if !maybe {
        return None;
    }
    parse_http_access(msg).filter(|a| a.status >= 400)
}

/// A request SGLang refused because it does not fit the context length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextRejection {
    /// The model's context length, `context_len` (tokens).
    pub context_len: u64,
    /// The prompt's length (tokens).
    pub input_tokens: Option<u64>,
    /// The request's `max_new_tokens` / `max_tokens`, when the rejection is for prompt plus
    /// completion (tokens).
    pub max_new_tokens: Option<u64>,
}

impl ContextRejection {
    /// Prompt plus requested completion (tokens), when both are known; else the prompt.
    pub fn requested_tokens(&self) -> Option<u64> {
        match (self.input_tokens, self.max_new_tokens) {
            (Some(i), Some(o)) => i.checked_add(o),
            (i, _) => i,
        }
    }
}

/// `(N tokens) is longer than the model's context length (M tokens)`.
fn input_too_long(i: &[u8]) -> Res<'_, ContextRejection> {
    let (i, input) = delimited(char('('), number, tag(&b" tokens)"[..])).parse(i)?;
    let (i, _) = tag(&b" is longer than the model's context length ("[..]).parse(i)?;
    let (i, ctx) = number(i)?;
    Ok((
        i,
        ContextRejection {
            context_len: ctx,
            input_tokens: Some(input),
            max_new_tokens: None,
        },
    ))
}

/// `of M tokens. You requested a total of T tokens: I tokens from the input messages and O
/// tokens for the completion`.
fn total_too_long(i: &[u8]) -> Res<'_, ContextRejection> {
    let (i, ctx) = number(i)?;
    let (i, _) = tag(&b" tokens."[..]).parse(i)?;
    let parts = (
        space0,
        tag(&b"You requested a total of "[..]),
        number,
        tag(&b" tokens: "[..]),
        number,
        tag(&b" tokens from the input messages and "[..]),
        number,
    );
    let (i, rest) = opt(parts).parse(i)?;
    Ok((
        i,
        ContextRejection {
            context_len: ctx,
            input_tokens: rest.map(|r| r.4),
            max_new_tokens: rest.map(|r| r.6),
        },
    ))
}

const INPUT_MARK: &[u8] = b"The input ";
const TOTAL_MARK: &[u8] = b"exceeds the model's maximum context length of ";
// built once: `memmem::find` builds a searcher per call, and this runs on every plain line
static INPUT_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(INPUT_MARK));
static TOTAL_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(TOTAL_MARK));
static CONTEXT_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"context length"));

/// The context-length rejection anywhere in `text` (a log message, a traceback's `ValueError:`
/// line, a JSON error body), if it holds one.
pub fn parse_context_rejection(text: &str) -> Option<ContextRejection> {
    let b = text.as_bytes();
    // both messages say `context length`: one search on the usual line, which says neither
    CONTEXT_FINDER.find(b)?;
    if let Some(p) = TOTAL_FINDER.find(b)
        && let Ok((_, r)) = total_too_long(&b[p + TOTAL_MARK.len()..])
    {
        return Some(r);
    }
    let mut from = 0;
    while let Some(p) = INPUT_FINDER.find(&b[from..]) {
        let at = from + p + INPUT_MARK.len();
        if let Ok((_, r)) = input_too_long(&b[at..]) {
            return Some(r);
        }
        from = at;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three-digit short-cut reads every status as the count of zeros and the general
    /// parse do, over every run of one to four digits.
    #[test]
    fn every_short_digit_run_reads_as_the_general_parse() {
        let general = |d: &[u8]| {
            let zeros = d.iter().take_while(|&&c| c == b'0').count();
            let significant = d.get(zeros.min(d.len().saturating_sub(1))..)?;
            let status = crate::num::parse_u64_bytes(significant)?;
            u16::try_from(status)
                .ok()
                .filter(|s| (100..600).contains(s))
        };
        for n in 1..=4u32 {
            for v in 0..10u32.pow(n) {
                let d = format!("{v:0width$}", width = n as usize);
                assert_eq!(access_status(d.as_bytes()), general(d.as_bytes()), "{d}");
            }
        }
        for d in ["", "2x0", "20a", "-20", " 200", "２00"] {
            assert_eq!(access_status(d.as_bytes()), general(d.as_bytes()), "{d}");
        }
    }

    #[test]
    fn the_error_screen_keeps_every_error_status() {
        // real-long/ascend-dsr1-dp16-mtp-mixed.log line 1828
        let m = r#"INFO:     127.0.0.1:44946 - "GET /health_generate HTTP/1.1" 503 Service Unavailable"#;
        assert_eq!(parse_http_error(m).map(|a| a.status), Some(503));
        // real-2/113 line 2: a success is no error
        let ok = r#"INFO:     192.0.2.1:44476 - "POST /v1/chat/completions HTTP/1.1" 200 OK"#;
        assert_eq!(parse_http_error(ok), None);
        // blanks the grammar takes after the quote (several spaces, a tab), a quote later on
        for (m, status) in [
            (
                r#"1.2.3.4:5 - "POST /generate HTTP/1.1"   400 Bad Request"#,
                400,
            ),
            ("1.2.3.4:5 - \"POST /generate HTTP/1.1\"\t429 Too Many", 429),
            (r#"1.2.3.4:5 - "POST /generate HTTP/1.1" 500 "x""#, 500),
        ] {
            assert_eq!(parse_http_error(m).map(|a| a.status), Some(status), "{m}");
        }
        // a 4 after a quote that is not the status: screened in, then the grammar says 200
        let m = r#"1.2.3.4:5 - "POST /generate HTTP/1.1" 200 OK " 4""#;
        assert_eq!(parse_http_access(m).map(|a| a.status), Some(200));
        assert_eq!(parse_http_error(m), None);
    }

    #[test]
    fn access_lines_from_a_real_log() {
        // real-long/ascend-dsr1-dp16-mtp-mixed.log line 1828 (the message after the stamp)
        let a = parse_http_access(
            r#"INFO:     127.0.0.1:44946 - "GET /health_generate HTTP/1.1" 503 Service Unavailable"#,
        )
        .expect("access line");
        assert_eq!(
            (a.method, a.path, a.status),
            ("GET", "/health_generate", 503)
        );
        assert!(!a.is_generation());
        // real-2/113 line 2
        let a = parse_http_access(
            r#"INFO:     192.0.2.1:44476 - "POST /v1/chat/completions HTTP/1.1" 200 OK"#,
        )
        .expect("access line");
        assert_eq!(a.status, 200);
        assert!(a.is_generation());
        assert_eq!(
            parse_http_access("INFO:     Started server process [1234]"),
            None
        );
        // as `Record::message` holds it: the level stripped by the line parser
        let rec = crate::parse_line(
            r#"[2026-08-23 09:06:20] INFO:     192.0.2.1:44476 - "POST /v1/chat/completions HTTP/1.1" 200 OK"#.as_bytes(),
            2,
        );
        let a = parse_http_access(rec.message).expect("access line in a record");
        assert_eq!((a.path, a.status), ("/v1/chat/completions", 200));
        assert_eq!(
            parse_http_access(r#"INFO:     1.2.3.4:5 - "POST /generate HTTP/1.1" 999 Odd"#),
            None
        );
    }

    #[test]
    fn both_context_length_wordings() {
        // tokenizer_manager.py `_validate_one_request`
        let r = parse_context_rejection(
            "ValueError: The input (131123 tokens) is longer than the model's context length (131072 tokens).",
        )
        .expect("input too long");
        assert_eq!(r.context_len, 131072);
        assert_eq!(r.input_tokens, Some(131123));
        assert_eq!(r.requested_tokens(), Some(131123));
        let r = parse_context_rejection(
            "Error in request: Requested token count exceeds the model's maximum context length of 64000 tokens. You requested a total of 71897 tokens: 7897 tokens from the input messages and 64000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
        )
        .expect("total too long");
        assert_eq!(
            (r.context_len, r.input_tokens, r.max_new_tokens),
            (64000, Some(7897), Some(64000))
        );
        assert_eq!(r.requested_tokens(), Some(71897));
        // the short form some clients see
        let r = parse_context_rejection(
            "Requested token count exceeds the model's maximum context length of 131072 tokens.",
        )
        .expect("short form");
        assert_eq!((r.context_len, r.input_tokens), (131072, None));
        assert_eq!(parse_context_rejection("The input is fine"), None);
        assert_eq!(
            parse_context_rejection("The input (x tokens) is longer than the model's"),
            None
        );
    }

    /// Every line of the real logs, whole and from each `]`, space or `I` on (the message the
    /// line parser hands over starts at one of them): the scan reads it as the grammar does.
    #[test]
    fn the_scan_is_the_grammar_on_every_real_line() {
        let (mut lines, mut access_lines) = (0usize, 0usize);
        for p in crate::test_data::files() {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            for line in text.lines() {
                lines += 1;
                for (i, c) in line.char_indices() {
                    if i == 0 || matches!(c, ']' | ' ' | 'I') {
                        let m = &line[i..];
                        let fast = parse_http_access(m);
                        assert_eq!(fast, parse_http_access_grammar(m), "{m:?}");
                        access_lines += usize::from(i == 0 && fast.is_some());
                    }
                }
            }
        }
        assert!(lines > 10_000 && access_lines > 0, "{lines} {access_lines}");
    }

    proptest::proptest! {
        /// Near-misses of the access grammar: every optional part, blank and bound varied.
        #[test]
        fn the_scan_is_the_grammar_on_near_misses(
            m in r#"(INFO:[ \t]{0,2})?[0-9a-z.:"]{0,6}( - "| -"|  - ")?[A-Z]{0,4}[a-z]?( )?[/a-z?"]{0,6}( HTTP/| HTTP)?[0-9.]{0,3}"?[ \t]{0,2}0{0,30}[0-9]{0,21}[ A-Za-z]{0,4}"#
        ) {
            proptest::prop_assert_eq!(parse_http_access(&m), parse_http_access_grammar(&m));
        }
    }
}
