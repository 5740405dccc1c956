//! Shared `nom` building blocks of the line grammar: the input and result types, byte
//! predicates, and space-separated tokens.
//!
//! Every parser of this crate is a `nom` parser over `&[u8]` (`complete` input: the reader
//! hands over whole lines) with the unit error `()`: the grammar only needs to know *that*
//! an alternative failed, and a zero-sized error keeps a failed alternative free. The parse of
//! a line as a whole never fails: a line no parser accepts is `Event::Other` or
//! `Event::Malformed`, decided by the caller.

use nom::bytes::complete::{take_till1, take_while};
use nom::sequence::preceded;
use nom::{IResult, Parser};

/// Result of a parser of this crate: the rest of the input and the value, or `()` on failure.
pub(crate) type PResult<'a, O> = IResult<&'a [u8], O, ()>;

/// A failed alternative (the unit error).
#[inline(always)]
pub(crate) fn fail<'a, O>() -> PResult<'a, O> {
    Err(nom::Err::Error(()))
}

/// The part of `whole` (a `str` whose bytes `rest` is a suffix of) where `rest` starts.
/// `rest` always starts after an ASCII byte the grammar consumed (or at the start), so the
/// cut is a char boundary; should it not be, the result is empty rather than a panic.
#[inline(always)]
pub(crate) fn str_tail<'a>(whole: &'a str, rest: &[u8]) -> &'a str {
    whole
        .get(whole.len().saturating_sub(rest.len())..)
        .unwrap_or("")
}

/// Offset of the suffix `rest` inside `whole` (bytes).
#[inline(always)]
pub(crate) fn offset_of(whole: &[u8], rest: &[u8]) -> usize {
    whole.len().saturating_sub(rest.len())
}

/// Offset of `part` (a subslice, e.g. a parser's output) inside `whole` (bytes).
#[inline(always)]
pub(crate) fn pos_in(whole: &[u8], part: &[u8]) -> usize {
    (part.as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize)
}

/// Two ASCII digits as a number 0 ..= 99.
#[inline(always)]
pub(crate) fn digit2(i: &[u8]) -> PResult<'_, u32> {
    match i {
        [a @ b'0'..=b'9', b @ b'0'..=b'9', rest @ ..] => {
            Ok((rest, u32::from(a - b'0') * 10 + u32::from(b - b'0')))
        }
        _ => fail(),
    }
}

/// One exact byte.
#[inline(always)]
pub(crate) fn byte<'a>(c: u8) -> impl Parser<&'a [u8], Output = u8, Error = ()> {
    move |i: &'a [u8]| match i.split_first() {
        Some((&x, rest)) if x == c => Ok((rest, x)),
        _ => fail(),
    }
}

/// The literal `t` (nom's `tag`, with one slice compare instead of a byte loop: the hot heads).
#[inline(always)]
pub(crate) fn lit<'a>(t: &'static [u8]) -> impl Parser<&'a [u8], Output = &'a [u8], Error = ()> {
    move |i: &'a [u8]| match i.split_at_checked(t.len()) {
        Some((head, rest)) if head == t => Ok((rest, head)),
        _ => fail(),
    }
}

/// Offset of the first `needle` in `h` (`Some(0)` for an empty needle, as `take_until` has it).
/// `memchr` on the needle's first byte, then one compare: for the short needles of this
/// grammar on short lines, far cheaper than building a substring searcher per call.
#[inline]
pub(crate) fn find(h: &[u8], needle: &[u8]) -> Option<usize> {
    let Some((&first, tail)) = needle.split_first() else {
        return Some(0);
    };
    let mut at = 0;
    while let Some(p) = memchr::memchr(first, h.get(at..)?) {
        let s = at + p;
        if h.get(s + 1..)?.starts_with(tail) {
            return Some(s);
        }
        at = s + 1;
    }
    None
}

/// nom's `take_until` (complete input) for the short needles of this grammar: the input up to
/// the first `needle`, which is not consumed; fails when there is none. See [`find`].
#[inline]
pub(crate) fn until<'a>(needle: &[u8]) -> impl Parser<&'a [u8], Output = &'a [u8], Error = ()> {
    move |i: &'a [u8]| match find(i, needle) {
        Some(p) => Ok((&i[p..], &i[..p])),
        None => fail(),
    }
}

/// One byte for which `f` holds.
#[inline(always)]
pub(crate) fn byte_if<'a>(
    f: impl Fn(u8) -> bool,
) -> impl Parser<&'a [u8], Output = u8, Error = ()> {
    move |i: &'a [u8]| match i.split_first() {
        Some((&x, rest)) if f(x) => Ok((rest, x)),
        _ => fail(),
    }
}

/// Spaces (` ` only, as SGLang and the wrappers write them).
#[inline(always)]
pub(crate) fn spaces(i: &[u8]) -> PResult<'_, &[u8]> {
    take_while(|c| c == b' ')(i)
}

/// Whitespace as `str::trim_start` sees it in ASCII (space, tab, line feed, vertical tab, form
/// feed, carriage return).
#[inline(always)]
pub(crate) fn ws(i: &[u8]) -> PResult<'_, &[u8]> {
    take_while(|c: u8| c.is_ascii_whitespace() || c == 0x0b)(i)
}

/// `i` after [`ws`] (never fails).
#[inline(always)]
pub(crate) fn skip_ws(i: &[u8]) -> &[u8] {
    ws(i).map_or(i, |(r, _)| r)
}

/// `i` after any `:` (never fails).
#[inline(always)]
pub(crate) fn skip_colons(i: &[u8]) -> &[u8] {
    take_while::<_, _, ()>(|c| c == b':')(i).map_or(i, |(r, _)| r)
}

/// One space-separated token (the envelope's `DP1`, `TP3`, `file.py:222`).
#[inline]
fn token(i: &[u8]) -> PResult<'_, &[u8]> {
    preceded(spaces, take_till1(|c| c == b' ')).parse(i)
}

/// Calls `f` on every space-separated token of `b` (empty tokens skipped, as
/// `split(' ').filter(|t| !t.is_empty())` would) and returns whether `f` held for all.
#[inline]
pub(crate) fn all_tokens(b: &[u8], mut f: impl FnMut(&[u8]) -> bool) -> bool {
    let mut all = true;
    let mut it = nom::combinator::iterator(b, token);
    for tok in &mut it {
        all &= f(tok);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use nom::bytes::complete::take_until;

    #[test]
    fn until_is_take_until() {
        let hays: [&[u8]; 9] = [
            b"",
            b"a",
            b"#retracted_reqs: 7, #new_token_ratio: 0.4213 -> 0.6000",
            b"a, b, c",
            b",,, ,",
            b"x: y: z",
            b"->-->",
            b"- > ->",
            b": ",
        ];
        for h in hays {
            for n in [
                &b", "[..],
                b": ",
                b"->",
                b",",
                b"",
                b" max_total_num_tokens=",
            ] {
                let want = take_until::<_, _, ()>(n).parse(h);
                assert_eq!(until(n).parse(h), want, "{h:?} {n:?}");
            }
        }
    }
}
