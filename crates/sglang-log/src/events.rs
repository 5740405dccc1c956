//! Non-batch events: retraction lines (spec §2.3) and startup capacity lines (spec §2.9).

#[cfg(any(test, feature = "grammar-check"))]
use crate::grammar::byte;
#[cfg(test)]
use crate::grammar::byte_if;
use crate::grammar::{PResult, until};
use crate::num::{parse_f64_bytes, parse_i64_bytes, parse_u64_bytes, parse_with_unit};
use nom::Parser;
use nom::branch::alt;
#[cfg(any(test, feature = "grammar-check"))]
use nom::bytes::complete::take_till;
use nom::bytes::complete::{tag, take_till1, take_while};
use nom::combinator::rest;
#[cfg(any(test, feature = "grammar-check"))]
use nom::combinator::verify;
#[cfg(test)]
use nom::combinator::{opt, value};
use nom::sequence::preceded;
#[cfg(any(test, feature = "grammar-check"))]
use nom::sequence::{separated_pair, terminated};

/// Which wording a retraction line used (spec §2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetractionWording {
    /// `decode out of memory happened, …` (v0.1.17 – v0.2.13) or
    /// `Decode out of memory happened. …` (v0.2.14 – v0.4.6.post5).
    DecodeOutOfMemory,
    /// `KV cache pool is full. Retract requests. …` (v0.4.7+).
    KvCachePoolFull,
    /// `Testing retraction. …` (`SGLANG_TEST_RETRACT`, v0.5.7+): a test-mode retraction.
    Testing,
}

/// A retraction line: the running decode batch ran out of KV slots and requests were evicted
/// back to the waiting queue. Every TP rank prints it (deduplicate by timestamp + values).
#[derive(Clone, Debug, PartialEq)]
pub struct Retraction<'a> {
    /// Which wording the line used.
    pub wording: RetractionWording,
    /// `#retracted_reqs`: requests removed from the running batch. Unit: requests.
    pub retracted_reqs: Option<u64>,
    /// `#aborted_retracted_reqs` (v0.5.3 – v0.5.4.post1). Unit: requests.
    pub aborted_retracted_reqs: Option<u64>,
    /// `#new_tokens_gained` (v0.5.7+): free KV slots gained by the retraction. Unit: tokens.
    pub new_tokens_gained: Option<u64>,
    /// `#mamba_num_gained` (v0.5.11+, hybrid SSM). Unit: mamba slots.
    pub mamba_num_gained: Option<u64>,
    /// `#new_token_ratio: a -> b`, the `a` (admission reservation factor before). Unit: ratio.
    pub new_token_ratio_before: Option<f64>,
    /// `#new_token_ratio: a -> b`, the `b` (after; capped at 1.0). Unit: ratio.
    pub new_token_ratio_after: Option<f64>,
    /// The message text from the retraction head to the end of line.
    pub text: &'a str,
}

/// A retraction head and its wording: `KV cache pool is full. Retract requests.`,
/// `Testing retraction.`, `Decode out of memory happened[.,]` / `decode out of memory happened[.,]`.
/// Each literal compared as one slice ([`retraction_head_grammar`] is the same in `nom`, whose
/// `tag` compares byte by byte, ~200 instructions a line; the tests compare the two).
fn retraction_head(i: &[u8]) -> PResult<'_, RetractionWording> {
    const OOM: [&[u8]; 2] = [
        b"Decode out of memory happened",
        b"decode out of memory happened",
    ];
    let found = if let Some(r) = i.strip_prefix(b"KV cache pool is full. Retract requests.") {
        (r, RetractionWording::KvCachePoolFull)
    } else if let Some(r) = i.strip_prefix(b"Testing retraction.") {
        (r, RetractionWording::Testing)
    } else if let Some(r) = OOM.iter().find_map(|h| i.strip_prefix(*h)) {
        let r = match r.split_first() {
            Some((b'.' | b',', after)) => after,
            _ => r,
        };
        (r, RetractionWording::DecodeOutOfMemory)
    } else {
        return Err(nom::Err::Error(()));
    };
    Ok(found)
}

/// [`retraction_head`] by the grammar of record (the tests compare the two on every head,
/// its near misses and the real retraction lines).
#[cfg(test)]
fn retraction_head_grammar(i: &[u8]) -> PResult<'_, RetractionWording> {
    let oom = terminated(
        alt((
            tag(&b"Decode out of memory happened"[..]),
            tag(&b"decode out of memory happened"[..]),
        )),
        opt(byte_if(|c| c == b'.' || c == b',')),
    );
    alt((
        value(
            RetractionWording::KvCachePoolFull,
            tag(&b"KV cache pool is full. Retract requests."[..]),
        ),
        value(RetractionWording::Testing, tag(&b"Testing retraction."[..])),
        value(RetractionWording::DecodeOutOfMemory, oom),
    ))
    .parse(i)
}

/// Calls `f(key, value)` for each `key<kv>value` fragment of `body` separated by `sep`, keys
/// and values trimmed of ASCII whitespace (fragments without `kv` are skipped). A fragment is
/// the text up to the next `sep` (which is consumed), or the non-empty rest. One scan, no
/// combinator frames; `for_each_pair_grammar` is the same walk in nom, which the tests
/// compare it with.
pub(crate) fn for_each_pair<'a>(
    body: &'a [u8],
    sep: &'static [u8],
    kv: u8,
    mut f: impl FnMut(&'a [u8], &'a [u8]),
) {
    let mut rest = body;
    loop {
        let (frag, next) = match crate::grammar::find(rest, sep) {
            Some(i) => (&rest[..i], rest.get(i + sep.len()..)),
            None if rest.is_empty() => return,
            None => (rest, None),
        };
        if let Some(c) = memchr::memchr(kv, frag) {
            f(frag[..c].trim_ascii(), frag[c + 1..].trim_ascii());
        }
        match next {
            Some(n) => rest = n,
            None => return,
        }
    }
}

/// One `sep`-separated fragment (`sep` consumed), or the rest (possibly empty, then the
/// iteration ends).
#[cfg(any(test, feature = "grammar-check"))]
fn piece<'a>(i: &'a [u8], sep: &'static [u8]) -> PResult<'a, &'a [u8]> {
    alt((
        terminated(until(sep), tag(sep)),
        verify(rest, |r: &[u8]| !r.is_empty()),
    ))
    .parse(i)
}

/// [`for_each_pair`] by the grammar of record.
#[cfg(any(test, feature = "grammar-check"))]
pub(crate) fn for_each_pair_grammar<'a>(
    body: &'a [u8],
    sep: &'static [u8],
    kv: u8,
    mut f: impl FnMut(&'a [u8], &'a [u8]),
) {
    let mut it = nom::combinator::iterator(body, |i| piece(i, sep));
    for frag in &mut it {
        let mut pair = separated_pair(take_till(|c| c == kv), byte(kv), rest);
        if let Ok((_, (k, v))) = pair.parse(frag) {
            f(k.trim_ascii(), v.trim_ascii());
        }
    }
}

/// Parses a retraction message (the message must start with one of the retraction heads).
pub(crate) fn parse_retraction(msg: &str) -> Option<Retraction<'_>> {
    let (body, wording) = retraction_head(msg.as_bytes()).ok()?;
    let mut r = Retraction {
        wording,
        retracted_reqs: None,
        aborted_retracted_reqs: None,
        new_tokens_gained: None,
        mamba_num_gained: None,
        new_token_ratio_before: None,
        new_token_ratio_after: None,
        text: msg,
    };
    for_each_pair(body, b", ", b':', |k, v| match k {
        b"#retracted_reqs" => r.retracted_reqs = parse_u64_bytes(v),
        b"#aborted_retracted_reqs" => r.aborted_retracted_reqs = parse_u64_bytes(v),
        b"#new_tokens_gained" => r.new_tokens_gained = parse_u64_bytes(v),
        b"#mamba_num_gained" => r.mamba_num_gained = parse_u64_bytes(v),
        b"#new_token_ratio" => {
            // `a -> b`: `separated_pair(until("->"), tag("->"), rest)`, without its frames
            if let Some(p) = crate::grammar::find(v, b"->") {
                r.new_token_ratio_before = parse_f64_bytes(v[..p].trim_ascii());
                r.new_token_ratio_after = parse_f64_bytes(v[p + 2..].trim_ascii());
            }
        }
        _ => {}
    });
    Some(r)
}

/// The scheduler's capacity line (spec §2.9): `max_total_num_tokens=N, chunked_prefill_size=N,
/// max_prefill_tokens=N, max_running_requests=N, context_len=N, available_gpu_mem=X GB`
/// (fields vary by version; each is `None` when absent). Printed by TP0 of each DP group.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CapacityLine {
    /// `max_total_num_tokens`: KV pool size of this rank. Unit: tokens.
    pub max_total_num_tokens: Option<u64>,
    /// `chunked_prefill_size` (v0.4.2+; `-1` = chunking disabled). Unit: tokens.
    pub chunked_prefill_size: Option<i64>,
    /// `max_prefill_tokens`. Unit: tokens.
    pub max_prefill_tokens: Option<u64>,
    /// `max_running_requests`. Unit: requests.
    pub max_running_requests: Option<u64>,
    /// `context_len`. Unit: tokens.
    pub context_len: Option<u64>,
    /// `available_gpu_mem` (v0.4.7+; `available_cpu_mem` on CPU). Unit: GB as SGLang prints it
    /// (GiB: SGLang divides bytes by 1 << 30).
    pub available_gpu_mem_gb: Option<f64>,
    /// The memory figures of a startup line (`Capture … graph end`, `Load weight end`, `Memory
    /// pool end`) this capacity summary was glued behind on one line, if it was (a paste or a
    /// lost newline joined the two records).
    pub glued_memory: Option<MemoryLine>,
}

pub(crate) fn parse_capacity(msg: &str) -> CapacityLine {
    let mut c = CapacityLine::default();
    let body = msg.trim_end().trim_end_matches(',');
    for_each_pair(body.as_bytes(), b", ", b'=', |k, v| match k {
        b"max_total_num_tokens" => c.max_total_num_tokens = parse_u64_bytes(v),
        b"chunked_prefill_size" => c.chunked_prefill_size = parse_i64_bytes(v),
        b"max_prefill_tokens" => c.max_prefill_tokens = parse_u64_bytes(v),
        b"max_running_requests" => c.max_running_requests = parse_u64_bytes(v),
        b"context_len" => c.context_len = parse_u64_bytes(v),
        b"available_gpu_mem" | b"available_cpu_mem" => {
            c.available_gpu_mem_gb = quantity(v, "GB");
        }
        _ => {}
    });
    c
}

/// A quantity with its unit word, e.g. `58.76 GB` (`unit` = `GB`); the unit may be glued to
/// the number and a trailing `.` is ignored ([`parse_with_unit`] on bytes).
fn quantity(v: &[u8], unit: &str) -> Option<f64> {
    std::str::from_utf8(v)
        .ok()
        .and_then(|v| parse_with_unit(v, unit))
}

/// `KV Cache is allocated. [dtype: D, ]#tokens: N, K size: X GB, V size: Y GB` (MLA models:
/// `KV size: X GB`). Printed once per rank. "GB" here means GiB.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KvCacheAllocated {
    /// `#tokens`: KV pool size. Unit: tokens.
    pub tokens: Option<u64>,
    /// `K size`. Unit: GiB.
    pub k_size_gb: Option<f64>,
    /// `V size`. Unit: GiB.
    pub v_size_gb: Option<f64>,
    /// `KV size` (MLA). Unit: GiB.
    pub kv_size_gb: Option<f64>,
}

impl KvCacheAllocated {
    /// Total KV pool bytes in GiB: `KV size`, or `K size + V size`.
    pub fn total_gb(&self) -> Option<f64> {
        self.kv_size_gb.or(match (self.k_size_gb, self.v_size_gb) {
            (Some(k), Some(v)) => Some(k + v),
            _ => None,
        })
    }
}

pub(crate) fn parse_kv_allocated(body: &str) -> KvCacheAllocated {
    let mut kv = KvCacheAllocated::default();
    let body = body.trim().trim_end_matches(['.', ',']);
    for_each_pair(body.as_bytes(), b", ", b':', |k, v| match k {
        b"#tokens" => kv.tokens = parse_u64_bytes(v),
        b"K size" => kv.k_size_gb = quantity(v, "GB"),
        b"V size" => kv.v_size_gb = quantity(v, "GB"),
        b"KV size" => kv.kv_size_gb = quantity(v, "GB"),
        _ => {}
    });
    kv
}

/// GPU memory reported by a startup line (`Load weight end.`, `Memory pool end.`,
/// `Capture … graph end.`). "GB" in SGLang's lines means GiB.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemoryLine {
    /// `avail mem=X GB`: free device memory after the step. Unit: GiB.
    pub avail_mem_gb: Option<f64>,
    /// `mem usage=X GB`: memory the step took (weights for Load weight end). Unit: GiB.
    pub mem_usage_gb: Option<f64>,
    /// `elapsed=X s` (Load weight end, v0.5.9+) or `Time elapsed: X s` (graph capture). Unit: s.
    pub elapsed_s: Option<f64>,
}

/// The number after the first `key` in `msg`, up to `unit` (or the end), trimmed.
fn number_after(msg: &str, key: &str, unit: &str) -> Option<f64> {
    let (key, unit) = (key.as_bytes(), unit.as_bytes());
    let mut num = preceded((until(key), tag(key)), alt((until(unit), rest)));
    let (_, v) = num.parse(msg.as_bytes()).ok()?;
    parse_f64_bytes(v.trim_ascii())
}

pub(crate) fn parse_memory(msg: &str) -> MemoryLine {
    MemoryLine {
        avail_mem_gb: number_after(msg, "avail mem=", "GB"),
        mem_usage_gb: number_after(msg, "mem usage=", "GB"),
        elapsed_s: number_after(msg, "elapsed=", "s")
            .or_else(|| number_after(msg, "Time elapsed: ", "s")),
    }
}

/// HiCache host pool: `Allocating {F2} GB host memory for hierarchical KV cache.` (v0.4.x) or
/// `Allocating kv hierarchical KV host pool: {N} tokens, {F2} GB host memory.` (main).
pub(crate) fn parse_hicache(msg: &str) -> Option<(Option<f64>, Option<u64>)> {
    let (rest, _) = tag::<_, _, ()>(&b"Allocating "[..])
        .parse(msg.as_bytes())
        .ok()?;
    memchr::memmem::find(rest, b"host")?;
    let mut gb = None;
    let mut tokens = None;
    // words separated by spaces, `,` and `:`; a number is the word before its unit
    let sep = |c: u8| matches!(c, b' ' | b',' | b':');
    let word = preceded(take_while::<_, _, ()>(sep), take_till1(sep));
    let mut prev: &[u8] = b"";
    let mut words = nom::combinator::iterator(rest, word);
    for w in &mut words {
        match w {
            b"GB" if gb.is_none() => gb = parse_f64_bytes(prev),
            b"tokens" if tokens.is_none() => tokens = parse_u64_bytes(prev),
            _ => {}
        }
        prev = w;
    }
    Some((gb, tokens))
}

/// A launch command echoed into the log (`command=python3 -m sglang.launch_server --tp-size 16
/// --mem-fraction-static 0.8 …`, `python -m sglang.launch_server …`): the arguments the server
/// was started with, for a log whose `server_args=ServerArgs(…)` line is missing. Keeps the
/// text after `sglang.launch_server`; [`LaunchArgs::iter`] walks its flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchArgs<'a> {
    raw: &'a str,
}

impl<'a> LaunchArgs<'a> {
    pub(crate) fn new(raw: &'a str) -> Self {
        LaunchArgs { raw }
    }

    /// The text after `sglang.launch_server`.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// Every `--flag [value…]` in order: the flag without its dashes (`mem-fraction-static`),
    /// and its value tokens as written (`0.8`; `8 10 12` for a list; `""` for a bare switch).
    /// `--flag=value` is split at the `=`. Text before the first flag is skipped.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        LaunchIter { rest: self.raw }
    }

    /// The value of `flag` (without dashes, `-` or `_` alike), as [`LaunchArgs::iter`] gives
    /// it; the last one when repeated.
    pub fn get(&self, flag: &str) -> Option<&'a str> {
        let same = |f: &str| {
            f.len() == flag.len()
                && f.bytes()
                    .zip(flag.bytes())
                    .all(|(a, b)| a == b || (matches!(a, b'-' | b'_') && matches!(b, b'-' | b'_')))
        };
        self.iter().filter(|(f, _)| same(f)).map(|(_, v)| v).last()
    }
}

struct LaunchIter<'a> {
    rest: &'a str,
}

impl<'a> Iterator for LaunchIter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        // the next token that starts with `--`
        let start = loop {
            let s = self.rest.trim_start();
            if s.is_empty() {
                return None;
            }
            let end = s.find(char::is_whitespace).unwrap_or(s.len());
            if s.starts_with("--") && end > 2 {
                break s;
            }
            self.rest = &s[end..];
        };
        let end = start.find(char::is_whitespace).unwrap_or(start.len());
        let token = &start[2..end];
        if let Some((flag, value)) = token.split_once('=') {
            self.rest = &start[end..];
            return Some((flag, value));
        }
        // its value: the tokens up to the next `--flag` (or the end)
        let after = &start[end..];
        let mut value_end = 0;
        let mut cursor = 0;
        loop {
            let s = &after[cursor..];
            let lead = s.len() - s.trim_start().len();
            let s = &s[lead..];
            if s.is_empty() || s.starts_with("--") {
                break;
            }
            let len = s.find(char::is_whitespace).unwrap_or(s.len());
            cursor += lead + len;
            value_end = cursor;
        }
        let value = after[..value_end].trim_start();
        self.rest = &after[value_end..];
        Some((token, value))
    }
}

/// The `server_args=ServerArgs(…)` startup line: Python `repr` of every server argument.
/// Keeps the raw argument text; [`ServerArgs::get`] looks one argument up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerArgs<'a> {
    raw: &'a str,
}

impl<'a> ServerArgs<'a> {
    pub(crate) fn new(raw: &'a str) -> Self {
        ServerArgs { raw }
    }

    /// The text between `ServerArgs(` and the closing `)`.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// The value of argument `key` as written, with surrounding quotes removed, e.g.
    /// `get("mem_fraction_static") == Some("0.88")`, `get("model_path") == Some("Qwen/Qwen3-4B")`,
    /// `get("max_running_requests") == Some("None")`. Nested values (lists, dicts) are returned
    /// whole. `None` when the key is absent.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// All `(name, value)` pairs at the top level, in order (values unquoted as in [`ServerArgs::get`]).
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        ArgsIter { rest: self.raw }
    }
}

struct ArgsIter<'a> {
    rest: &'a str,
}

impl<'a> Iterator for ArgsIter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let s = self.rest.trim_start_matches([',', ' ']);
            if s.is_empty() {
                return None;
            }
            let eq = s.find('=')?;
            let name = s[..eq].trim();
            let vb = &s.as_bytes()[eq + 1..];
            let mut depth = 0i32;
            let mut quote: Option<u8> = None;
            let mut i = 0;
            while i < vb.len() {
                let c = vb[i];
                match quote {
                    Some(q) => {
                        if c == b'\\' {
                            i += 1;
                        } else if c == q {
                            quote = None;
                        }
                    }
                    None => match c {
                        b'\'' | b'"' => quote = Some(c),
                        b'(' | b'[' | b'{' => depth += 1,
                        b')' | b']' | b'}' => depth -= 1,
                        b',' if depth <= 0 => break,
                        _ => {}
                    },
                }
                i += 1;
            }
            let i = i.min(vb.len());
            let value_all = &s[eq + 1..];
            // ok: `i` stops at an ASCII ',' or at the end, both char boundaries
            let raw_v = value_all.get(..i).unwrap_or(value_all).trim();
            self.rest = value_all.get(i..).unwrap_or("");
            if name.is_empty() || name.contains(' ') && !name.starts_with('\'') {
                // not an argument (should not happen in a repr); skip the fragment
                continue;
            }
            let v = strip_quotes(raw_v);
            return Some((name, v));
        }
    }
}

fn strip_quotes(v: &str) -> &str {
    let b = v.as_bytes();
    if b.len() >= 2 && (b[0] == b'\'' || b[0] == b'"') && b[b.len() - 1] == b[0] {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

/// The largest batch size in the `bs=[…]` list of a CUDA-graph capture line (`Capture
/// [target] decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, …, 32],
/// avail mem=7.10 GB`, SGLang `cuda_graph_runner.py`), or `None` for any other message. The
/// list is the decode batch sizes that run as a graph; a larger batch runs eagerly.
pub fn cuda_graph_capture_max_bs(msg: &str) -> Option<u64> {
    if !msg.starts_with("Capture ") || !msg.contains("graph begin") {
        return None;
    }
    let (_, list) = msg.split_once("bs=[")?;
    let (list, _) = list.split_once(']')?;
    list.split(',')
        .filter_map(|v| parse_u64_bytes(v.trim().as_bytes()))
        .max()
}

/// Which line of a graph capture ([`GraphCapture`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureStage {
    /// `Capture [draft] [extend] cuda graph begin. … avail mem=X GB` (v0.5.x: `Capture target
    /// decode CUDA graph begin. backend=full, …, bs=[…], avail mem=X GB`).
    Begin,
    /// A progress bar of the capture: `Capturing batches (bs=N avail_mem=X GB): …` or
    /// `Capturing num tokens (num_tokens=N avail_mem=X GB): …` (piecewise graphs).
    Progress,
}

/// A CUDA/NPU-graph capture under way ([`crate::Event::GraphCapture`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphCapture {
    /// Which line.
    pub stage: CaptureStage,
    /// The free device memory the line prints (`avail mem=` / `avail_mem=`; the last one on a
    /// line of several bars). Unit: GB as SGLang prints them (GiB).
    pub avail_gib: Option<f64>,
    /// The largest decode batch size of its `bs=[…]` list ([`cuda_graph_capture_max_bs`]).
    pub max_bs: Option<u64>,
}

/// The number after the last `needle` of `msg`, as a finite non-negative GiB figure.
fn last_gib(msg: &str, needle: &str) -> Option<f64> {
    crate::num::leading_f64(&msg[msg.rfind(needle)? + needle.len()..])
}

/// A graph capture's `begin` line (`msg` starts with `Capture ` and holds `graph begin`).
pub(crate) fn parse_capture_begin(msg: &str) -> GraphCapture {
    GraphCapture {
        stage: CaptureStage::Begin,
        avail_gib: last_gib(msg, "avail mem=").or_else(|| last_gib(msg, "avail_mem=")),
        max_bs: cuda_graph_capture_max_bs(msg),
    }
}

/// A capture's progress bar anywhere in `msg` (several bars of one `\r`-joined line among
/// them): `None` when `msg` holds none.
pub(crate) fn parse_capture_progress(msg: &str) -> Option<GraphCapture> {
    // both bars say `Capturing `: one vector search screens the usual line (a `str::rfind`
    // builds a two-way searcher per call, ~1,000 instructions each)
    static CAPTURING: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"Capturing "));
    CAPTURING.find(msg.as_bytes())?;
    let at = msg
        .rfind("Capturing batches (")
        .or_else(|| msg.rfind("Capturing num tokens ("))?;
    Some(GraphCapture {
        stage: CaptureStage::Progress,
        avail_gib: last_gib(&msg[at..], "avail_mem="),
        max_bs: None,
    })
}

/// What opened a [`Stack`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StackKind {
    /// A Python traceback after `Scheduler hit an exception:` (the scheduler process died;
    /// SGLang `scheduler.py` `run_scheduler_process`).
    SchedulerException,
    /// Any other Python traceback (`Traceback (most recent call last):`).
    Traceback,
    /// The watchdog's py-spy dump of a hung process (`Pyspy dump for PID N:`, SGLang
    /// `utils/watchdog.py` → `pyspy_dump_schedulers`).
    PySpyDump,
}

/// One stack frame. Traceback frames are `File "PATH", line N, in FUNC`; py-spy frames are
/// `FUNC (PATH:N)`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Frame {
    /// The function.
    pub function: String,
    /// The file as printed.
    pub file: String,
    /// The line in the file, when printed.
    pub line: Option<u64>,
}

/// A multi-line stack read from consecutive log lines: a Python traceback (innermost frame
/// last) or a py-spy dump (innermost frame first).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Stack {
    /// What opened it.
    pub kind: StackKind,
    /// The line that opened it (1-based).
    pub first_line: u64,
    /// Its last line read (1-based).
    pub last_line: u64,
    /// The exception type of a traceback's last line (`torch.OutOfMemoryError`), if the
    /// traceback ran to it.
    pub exception: Option<String>,
    /// The exception's message, shortened to [`Stack::MAX_MESSAGE`] characters.
    pub message: Option<String>,
    /// Frames: a traceback's innermost [`Stack::MAX_FRAMES`] (innermost last); a py-spy dump's
    /// top [`Stack::MAX_FRAMES`] frames of the thread it shows (innermost first).
    pub frames: Vec<Frame>,
    /// Frames seen in all (a traceback's frames beyond the kept ones included).
    pub total_frames: u64,
    /// py-spy: the process line's name (`sglang::scheduler_DP0_TP0`).
    pub process: Option<String>,
    /// py-spy: the thread whose frames are kept (the first one not marked idle, else the
    /// first one), as `name`.
    pub thread: Option<String>,
    /// py-spy: whether that thread was marked `(idle)`.
    pub thread_idle: Option<bool>,
}

impl Stack {
    /// Frames kept per stack.
    pub const MAX_FRAMES: usize = 12;
    /// Characters kept of an exception message.
    pub const MAX_MESSAGE: usize = 300;

    fn new(kind: StackKind, line: u64) -> Self {
        Stack {
            kind,
            first_line: line,
            last_line: line,
            exception: None,
            message: None,
            frames: Vec::new(),
            total_frames: 0,
            process: None,
            thread: None,
            thread_idle: None,
        }
    }

    /// Whether the exception is an out-of-memory error: a `…OutOfMemoryError` type
    /// (`torch.OutOfMemoryError`, `torch.cuda.OutOfMemoryError`) or a message with
    /// `out of memory` (`RuntimeError: CUDA out of memory`, `HIP out of memory`).
    pub fn is_oom(&self) -> bool {
        self.exception
            .as_deref()
            .is_some_and(|e| e.ends_with("OutOfMemoryError"))
            || self
                .message
                .as_deref()
                .is_some_and(|m| m.contains("out of memory"))
    }

    /// The frames innermost first.
    pub fn innermost_first(&self) -> Box<dyn Iterator<Item = &Frame> + '_> {
        match self.kind {
            StackKind::PySpyDump => Box::new(self.frames.iter()),
            _ => Box::new(self.frames.iter().rev()),
        }
    }

    /// The innermost frame in SGLang's own code (a file under a `sglang/` directory), else
    /// the innermost Python frame (one with a line number), else the innermost frame.
    pub fn innermost_sglang_frame(&self) -> Option<&Frame> {
        self.innermost_first()
            .find(|f| f.file.contains("sglang/"))
            .or_else(|| self.innermost_first().find(|f| f.line.is_some()))
            .or_else(|| self.innermost_first().next())
    }
}

/// A traceback frame's text, borrowed from its line: what [`traceback_frame`] reads, before
/// any of it is copied (a stack that is only counted copies nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FrameText<'a> {
    /// `FUNC`, untrimmed (empty when the line has no `, in `).
    function: &'a str,
    /// `PATH`.
    file: &'a str,
    /// `N`, untrimmed.
    line: &'a str,
}

impl FrameText<'_> {
    /// The owned frame.
    fn to_frame(self) -> Frame {
        Frame {
            function: self.function.trim().to_string(),
            file: self.file.to_string(),
            line: parse_u64_bytes(self.line.trim().as_bytes()),
        }
    }
}

/// `File "PATH", line N, in FUNC` (leading spaces already stripped).
fn traceback_frame(msg: &str) -> Option<FrameText<'_>> {
    let rest = msg.strip_prefix("File \"")?;
    let (file, rest) = split_at_byte(rest, b'"')?;
    let rest = rest.strip_prefix(", line ")?;
    let (line, function) = split_at_first(rest, ", in ").unwrap_or((rest, ""));
    Some(FrameText {
        function,
        file,
        line,
    })
}

/// `hay` split around its first `byte` (ASCII), as [`str::split_once`] with that `char` splits
/// it, found by `memchr` (the `char` pattern's searcher costs ~250 instructions a call).
fn split_at_byte(hay: &str, byte: u8) -> Option<(&str, &str)> {
    debug_assert!(byte.is_ascii());
    let i = memchr::memchr(byte, hay.as_bytes())?;
    // an ASCII byte is a character of its own: both sides are on character boundaries
    Some((&hay[..i], &hay[i + 1..]))
}

/// `hay` split around the first `needle` (whose first byte is ASCII), as
/// [`str::split_once`] splits it: each candidate found by `memchr` on the needle's first byte,
/// with no searcher to build (a `&str` pattern's costs ~150 instructions a call).
fn split_at_first<'a>(hay: &'a str, needle: &str) -> Option<(&'a str, &'a str)> {
    let first = *needle.as_bytes().first()?;
    debug_assert!(first.is_ascii());
    memchr::memchr_iter(first, hay.as_bytes())
        .find(|&i| hay.as_bytes()[i..].starts_with(needle.as_bytes()))
        .map(|i| (&hay[..i], &hay[i + needle.len()..]))
}

/// `FUNC (PATH:N)` / `FUNC (lib.so)` (py-spy), leading spaces already stripped.
fn pyspy_frame(msg: &str) -> Option<Frame> {
    let inner = msg.strip_suffix(')')?;
    let (function, loc) = inner.rsplit_once(" (")?;
    if function.is_empty() || function.contains(' ') && !function.starts_with('<') {
        return None;
    }
    let (file, line) = match loc.rsplit_once(':') {
        Some((f, l)) if !l.is_empty() && l.bytes().all(|c| c.is_ascii_digit()) => {
            (f, parse_u64_bytes(l.as_bytes()))
        }
        _ => (loc, None),
    };
    Some(Frame {
        function: function.to_string(),
        file: file.to_string(),
        line,
    })
}

/// A traceback's last line `module.Type: message` / `Type`: the type and the message
/// (untrimmed: trimmed only when it is kept). One pass over the type, to the first `:`: every
/// byte a type name's, and the first byte of its last dotted part upper case (the split,
/// `rsplit` and `all` of the general form cost ~380 instructions a line; the tests compare
/// the two).
fn exception_line(msg: &str) -> Option<(&str, &str)> {
    let b = msg.as_bytes();
    let (mut end, mut last_part) = (b.len(), 0);
    for (i, &c) in b.iter().enumerate() {
        if c == b':' {
            end = i;
            break;
        }
        if !is_type_name_byte(c) {
            return None;
        }
        if c == b'.' {
            last_part = i + 1;
        }
    }
    // `:` is ASCII: both sides are on character boundaries
    let (head, message) = (&msg[..end], msg.get(end + 1..).unwrap_or(""));
    b.get(last_part)
        .filter(|_| last_part < end)
        .is_some_and(u8::is_ascii_uppercase)
        .then_some((head, message))
}

/// Whether `c` may be in an exception's dotted type name: an ASCII letter or digit, `_`, `.`.
fn is_type_name_byte(c: u8) -> bool {
    const TABLE: [bool; 256] = {
        let mut t = [false; 256];
        let mut i = 0;
        while i < 256 {
            let c = i as u8;
            t[i] = c.is_ascii_alphanumeric() || c == b'_' || c == b'.';
            i += 1;
        }
        t
    };
    TABLE[usize::from(c)]
}

/// Where a py-spy thread line `Thread N (idle): "name"` is, its name and idle mark.
fn pyspy_thread(msg: &str) -> Option<(String, bool)> {
    let rest = msg.strip_prefix("Thread ")?;
    let idle = rest.contains("(idle)");
    let name = rest
        .split_once('"')
        .and_then(|(_, n)| n.strip_suffix('"'))
        .unwrap_or(rest);
    Some((name.to_string(), idle))
}

/// The first `n` characters of `s` (all of it when shorter), as
/// `s.chars().take(n).collect()` makes them, without a push per character.
fn first_chars(s: &str, n: usize) -> String {
    // a character is at least one byte: a text of at most `n` bytes is kept whole
    let end = if s.len() <= n {
        s.len()
    } else {
        s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
    };
    s[..end].to_string()
}

/// Lines a stack may run to before it is closed unread (a paste that lost its end).
const MAX_STACK_LINES: u64 = 4096;
/// Stacks kept per collector (later ones are counted only).
const MAX_STACKS: usize = 64;

#[derive(Clone, Debug)]
struct OpenStack {
    stack: Stack,
    /// py-spy: the frames of the thread being read, and whether it is idle.
    cur_thread: Option<(String, bool, Vec<Frame>)>,
}

/// Reads [`Stack`]s from the records of one log, in order: a stack opens at
/// [`crate::Event::SchedulerException`], [`crate::Event::TracebackStart`] or a watchdog's
/// `Pyspy dump for PID N:` line, takes the untimestamped lines that follow, and closes at a
/// traceback's exception line, at the next timestamped line, or at a line that is not part of
/// it. Only records while a stack is open are looked at beyond their event.
#[derive(Clone, Debug, Default)]
pub struct StackCollector {
    open: Option<OpenStack>,
    done: Vec<Stack>,
    /// Stacks seen beyond the 64 kept (counted only).
    pub dropped: u64,
}

impl StackCollector {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a stack is open (its lines are still being read).
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Take the next record of the log.
    pub fn push(&mut self, rec: &crate::Record<'_>) {
        use crate::Event;
        let opens = match &rec.event {
            Event::SchedulerException(_) => Some(StackKind::SchedulerException),
            Event::TracebackStart => Some(StackKind::Traceback),
            Event::WatchdogTimeout(m) if m.starts_with("Pyspy dump for PID") => {
                Some(StackKind::PySpyDump)
            }
            _ => None,
        };
        if let Some(kind) = opens {
            // `Scheduler hit an exception: Traceback …` is one traceback, whichever line said it
            let chained = kind == StackKind::Traceback
                && self.open.as_ref().is_some_and(|o| {
                    o.stack.kind == StackKind::SchedulerException && o.stack.total_frames == 0
                });
            if !chained {
                self.close();
                self.open = Some(OpenStack {
                    stack: Stack::new(kind, rec.line_no),
                    cur_thread: None,
                });
            }
            return;
        }
        let Some(open) = self.open.as_mut() else {
            return;
        };
        if !rec.event.is_free_text()
            || rec.timestamp.is_some()
            || rec.line_no > open.stack.first_line + MAX_STACK_LINES
        {
            self.close();
            return;
        }
        let msg = rec.message.trim();
        if msg.is_empty() {
            return;
        }
        open.stack.last_line = rec.line_no;
        let st = &mut open.stack;
        if st.kind == StackKind::PySpyDump {
            if let Some(name) = msg.strip_prefix("Process ") {
                st.process = name.split_once(": ").map(|(_, n)| n.to_string());
            } else if msg.starts_with("Python v") {
            } else if let Some((name, idle)) = pyspy_thread(msg) {
                Self::end_thread(open);
                open.cur_thread = Some((name, idle, Vec::new()));
            } else if let Some(f) = pyspy_frame(msg) {
                if let Some((_, _, frames)) = open.cur_thread.as_mut()
                    && frames.len() < Stack::MAX_FRAMES
                {
                    frames.push(f);
                }
            } else {
                self.close();
            }
            return;
        }
        // a stack opened once `MAX_STACKS` are kept is only counted when it closes: its lines
        // are read for where it ends, and nothing of them is copied
        let kept = self.done.len() < MAX_STACKS;
        if let Some(f) = traceback_frame(msg) {
            st.total_frames += 1;
            if kept {
                if st.frames.len() == Stack::MAX_FRAMES {
                    st.frames.remove(0);
                }
                st.frames.push(f.to_frame());
            }
        } else if st.total_frames > 0
            && let Some((ty, message)) = exception_line(msg)
        {
            if kept {
                let message = message.trim();
                st.exception = Some(ty.to_string());
                st.message =
                    (!message.is_empty()).then(|| first_chars(message, Stack::MAX_MESSAGE));
            }
            self.close();
        }
    }

    /// py-spy: keep the thread just read if it is the first, or the first not idle.
    fn end_thread(open: &mut OpenStack) {
        if let Some((name, idle, frames)) = open.cur_thread.take() {
            let st = &mut open.stack;
            let replace = st.thread.is_none() || (st.thread_idle == Some(true) && !idle);
            if replace {
                st.total_frames = frames.len() as u64;
                st.frames = frames;
                st.thread = Some(name);
                st.thread_idle = Some(idle);
            }
        }
    }

    fn close(&mut self) {
        if let Some(mut open) = self.open.take() {
            Self::end_thread(&mut open);
            if self.done.len() < MAX_STACKS {
                self.done.push(open.stack);
            } else {
                self.dropped += 1;
            }
        }
    }

    /// The stacks closed so far.
    pub fn completed(&self) -> &[Stack] {
        &self.done
    }

    /// Close the open stack, if any, and return every stack read.
    pub fn finish(mut self) -> Vec<Stack> {
        self.close();
        self.done
    }
}

/// `full_layer_tokens=N, swa_layer_tokens=M` of the sliding-window pool line (tokens each).
pub(crate) fn parse_swa_pool(msg: &str) -> (Option<u64>, Option<u64>) {
    let (mut full, mut swa) = (None, None);
    let body = msg.split_once('.').map_or(msg, |(_, rest)| rest).trim();
    for_each_pair(body.as_bytes(), b", ", b'=', |k, v| match k {
        b"full_layer_tokens" => full = parse_u64_bytes(v),
        b"swa_layer_tokens" => swa = parse_u64_bytes(v),
        _ => {}
    });
    (full, swa)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_args_lookup() {
        let a = ServerArgs::new(
            "model_path='Qwen/Qwen3-4B', tp_size=8, mem_fraction_static=0.85, json_model_override_args='{\"a\": 1, \"b\": 2}', cuda_graph_bs=[1, 2, 4], name=\"x, y\", lora_paths=None",
        );
        assert_eq!(a.get("model_path"), Some("Qwen/Qwen3-4B"));
        assert_eq!(a.get("mem_fraction_static"), Some("0.85"));
        assert_eq!(a.get("cuda_graph_bs"), Some("[1, 2, 4]"));
        assert_eq!(a.get("name"), Some("x, y"));
        assert_eq!(a.get("lora_paths"), Some("None"));
        assert_eq!(
            a.get("json_model_override_args"),
            Some("{\"a\": 1, \"b\": 2}")
        );
        assert_eq!(a.get("missing"), None);
        assert_eq!(a.iter().count(), 7);
    }

    fn stacks_of(rel: &str) -> Vec<Stack> {
        let path = format!("{}/../../tests/data/{rel}", env!("CARGO_MANIFEST_DIR"));
        let mut c = StackCollector::new();
        crate::LogReader::open(std::path::Path::new(&path))
            .unwrap()
            .for_each(|r| c.push(r))
            .unwrap();
        c.finish()
    }

    #[test]
    fn a_scheduler_exception_at_weight_load() {
        let s =
            stacks_of("real-2/107-amd-2x-r9700-qwen36-35b-awq-oom-at-weight-init-unquant-moe.log");
        assert_eq!(s.len(), 1, "{s:?}");
        let s = &s[0];
        assert_eq!(s.kind, StackKind::SchedulerException);
        assert_eq!((s.first_line, s.last_line), (17, 81));
        assert_eq!(s.exception.as_deref(), Some("torch.OutOfMemoryError"));
        assert!(s.is_oom());
        assert!(
            s.message
                .as_deref()
                .unwrap()
                .starts_with("CUDA out of memory. Tried to allocate 256.00 MiB.")
        );
        assert_eq!(s.total_frames, 24);
        assert_eq!(s.frames.last().unwrap().function, "__torch_function__");
        let f = s.innermost_sglang_frame().unwrap();
        assert_eq!((f.function.as_str(), f.line), ("create_weights", Some(219)));
        assert!(
            f.file
                .ends_with("sglang/srt/layers/quantization/unquant.py")
        );
    }

    #[test]
    fn a_pyspy_dump_of_the_dp_controller() {
        let s = stacks_of("real/052-pr20766-multinode-dp-decode-then-pyspy-dump.log");
        assert_eq!(s.len(), 1, "{s:?}");
        let s = &s[0];
        assert_eq!(s.kind, StackKind::PySpyDump);
        assert_eq!(
            s.process.as_deref(),
            Some("sglang::data_parallel_controller")
        );
        assert_eq!(s.thread.as_deref(), Some("MainThread"));
        assert_eq!(s.thread_idle, Some(true));
        assert_eq!(s.frames[0].function, "wait4");
        assert_eq!(
            s.frames[1],
            Frame {
                function: "poll".into(),
                file: "multiprocessing/popen_fork.py".into(),
                line: Some(27)
            }
        );
        assert_eq!(s.innermost_sglang_frame().unwrap().function, "poll");
    }

    #[test]
    fn the_captured_batch_sizes() {
        let path = format!(
            "{}/../../tests/data/real-2/120-i33483-l40-startup-cuda-graph-max-bs32-vs-max-running-4096.log",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).unwrap();
        let line = crate::parse_line(text.lines().next().unwrap().as_bytes(), 1);
        assert_eq!(cuda_graph_capture_max_bs(line.message), Some(32));
        assert_eq!(
            cuda_graph_capture_max_bs(
                "Capture cuda graph end. Time elapsed: 3.2 s, mem usage=0.9 GB, avail mem=7.1 GB"
            ),
            None
        );
    }

    /// The graph-capture lines as `parse_line` types them, each from a real log: a `begin`
    /// line with its free memory (real-long/ascend-dsr1-dp16-mtp-mixed.log:1326), the v0.5
    /// target decode form with its batch sizes (real-long/rtx4090-qwen3-4b-kv-retraction.log:
    /// 27), a progress bar (real-4/119:8) and one after another bar on a `\r`-joined line
    /// without a stamp (real-4/102:35).
    #[test]
    fn the_graph_capture_lines() {
        fn line_of(file: &str, n: usize) -> String {
            let path = format!("{}/../../tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(path).unwrap();
            text.lines().nth(n - 1).unwrap().to_string()
        }
        fn capture(l: &str) -> GraphCapture {
            match crate::parse_line(l.as_bytes(), 1).event {
                crate::Event::GraphCapture(g) => g,
                e => panic!("{e:?}: {l}"),
            }
        }
        let begin = |avail_gib, max_bs| GraphCapture {
            stage: CaptureStage::Begin,
            avail_gib,
            max_bs,
        };
        let progress = |avail_gib| GraphCapture {
            stage: CaptureStage::Progress,
            avail_gib,
            max_bs: None,
        };
        assert_eq!(
            capture(&line_of("real-long/ascend-dsr1-dp16-mtp-mixed.log", 1326)),
            begin(Some(15.61), None)
        );
        assert_eq!(
            capture(&line_of("real-long/rtx4090-qwen3-4b-kv-retraction.log", 27)),
            begin(Some(2.04), Some(24))
        );
        assert_eq!(
            capture(&line_of(
                "real-4/119-pr18263-amd-aiter-mem0911-kv-overallocation-debug-prints.log",
                8
            )),
            progress(Some(20.14))
        );
        assert_eq!(
            capture(&line_of(
                "real-4/102-dgxspark-gb10-nvfp4-mem088-kv26k-stuck-graph-capture.log",
                35
            )),
            progress(Some(11.78))
        );
        // the v0.3 form without free memory; an end line is no capture under way
        assert_eq!(
            capture(&line_of("spec-examples/v0.3.1-v0.3.3-style.log", 4)),
            begin(None, None)
        );
        assert!(matches!(
            crate::parse_line(
                b"[2026-01-04 07:05:40 DP2 TP2 EP2] Capture cuda graph end. Time elapsed: 14.11 s. mem usage=0.60 GB. avail mem=15.01 GB.",
                1
            )
            .event,
            crate::Event::CudaGraphEnd(_)
        ));
    }

    #[test]
    fn no_stack_in_a_log_without_one() {
        assert!(stacks_of("real/049-i3752-watchdog-timeout-tp8-with-top.log").is_empty());
        assert!(stacks_of("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log").is_empty());
    }

    #[test]
    fn hicache() {
        assert_eq!(
            parse_hicache("Allocating 120.50 GB host memory for hierarchical KV cache."),
            Some((Some(120.5), None))
        );
        assert_eq!(
            parse_hicache(
                "Allocating kv hierarchical KV host pool: 2000000 tokens, 75.25 GB host memory."
            ),
            Some((Some(75.25), Some(2_000_000)))
        );
    }

    /// The pair walk is the grammar's on every real line (each split at `, ` with `:` and
    /// `=`) and on near-misses of both separators.
    #[test]
    fn the_pair_walk_is_the_grammar() {
        let mut lines = 0usize;
        for p in crate::test_data::files() {
            for line in std::fs::read(&p).unwrap().split(|&c| c == b'\n') {
                lines += 1;
                assert!(crate::grammar_check::pairs_agree(line), "{line:?}");
            }
        }
        assert!(lines > 10_000, "{lines}");
        for s in [
            "",
            ", ",
            ",",
            "a",
            "a:",
            ":b",
            "a: 1, ",
            "a: 1, , b: 2",
            "a: 1,, b: 2",
            "a: 1 ,b: 2",
            ", , ,",
            "a=1, b=2,",
            " x : y :z , w",
            "a: 1, b",
            "a: 1, b:",
        ] {
            assert!(crate::grammar_check::pairs_agree(s.as_bytes()), "{s:?}");
        }
    }

    /// The slice splits are `str::split_once`'s, and `first_chars` is `chars().take(n)`.
    #[test]
    fn the_fast_splits_are_the_str_ones() {
        let texts = [
            "",
            "\"",
            "a\"b\"c",
            "no quote",
            "File \"x.py\", line 3, in f",
            "/a/b.py\", line 12, in run, in g",
            ", in ",
            ", i, in x",
            "é, in ü\"ß:",
            "Error: ünïcode: 1",
            ":",
            "a:b:c",
        ];
        for t in texts {
            for b in [b'"', b':', b','] {
                assert_eq!(
                    split_at_byte(t, b),
                    t.split_once(char::from(b)),
                    "{t:?} {b}"
                );
            }
            for n in [", in ", ", line ", ","] {
                assert_eq!(split_at_first(t, n), t.split_once(n), "{t:?} {n:?}");
            }
            for n in [0, 1, 2, 3, 5, 300] {
                assert_eq!(
                    first_chars(t, n),
                    t.chars().take(n).collect::<String>(),
                    "{t:?}"
                );
            }
        }
        let long = "é".repeat(400);
        assert_eq!(first_chars(&long, 300), "é".repeat(300));
        assert_eq!(first_chars(&"a".repeat(301), 300), "a".repeat(300));
    }

    /// The table is the byte test it stands for, and the one-pass exception line the general
    /// form.
    #[test]
    fn the_exception_line_is_the_general_form() {
        for c in 0..=255u8 {
            let plain = c.is_ascii_alphanumeric() || c == b'_' || c == b'.';
            assert_eq!(is_type_name_byte(c), plain, "{c}");
        }
        // the general form: split at the first `:`, every byte of the type a type name's,
        // its last dotted part upper case
        let general = |msg: &'static str| {
            let (head, message) = msg.split_once(':').unwrap_or((msg, ""));
            let ok = !head.is_empty()
                && head
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
                && head
                    .rsplit('.')
                    .next()
                    .and_then(|last| last.bytes().next())
                    .is_some_and(|c| c.is_ascii_uppercase());
            ok.then_some((head, message))
        };
        for msg in [
            "",
            ":",
            "::",
            "A",
            "a",
            "A:",
            "A.",
            ".A",
            "a.B",
            "a.b",
            "A.b",
            "a.B.c: x",
            "a..B: x",
            "Error: x: y",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "torch.cuda.OutOfMemoryError: CUDA out of memory.",
            "  File \"x.py\", line 3, in f",
            "x = A: 1",
            "Ünï: x",
            "Aé: x",
            "A_1.B2_: x",
            "KeyError",
            "key error: x",
        ] {
            assert_eq!(exception_line(msg), general(msg), "{msg:?}");
        }
        assert_eq!(
            exception_line("torch.OutOfMemoryError: CUDA out of memory. "),
            Some(("torch.OutOfMemoryError", " CUDA out of memory. "))
        );
        assert_eq!(exception_line("KeyError"), Some(("KeyError", "")));
        assert_eq!(exception_line("torch.error: x"), None);
        assert_eq!(exception_line("a b: c"), None);
        assert_eq!(exception_line(": c"), None);
        assert_eq!(exception_line("x.: c"), None);
    }

    /// The retraction head compared as slices is the grammar's on every head, its near misses
    /// and the real retraction lines.
    #[test]
    fn the_retraction_head_is_the_grammar() {
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        for head in [
            "KV cache pool is full. Retract requests.",
            "Testing retraction.",
            "Decode out of memory happened",
            "decode out of memory happened",
        ] {
            for tail in ["", ".", ",", ". #retracted_reqs: 3", ", #x: 1", "x", " ."] {
                inputs.push(format!("{head}{tail}").into_bytes());
            }
            for cut in 0..head.len() {
                inputs.push(head.as_bytes()[..cut].to_vec());
            }
            inputs.push(head.to_uppercase().into_bytes());
        }
        for p in crate::test_data::files() {
            for line in std::fs::read(&p).unwrap().split(|&c| c == b'\n') {
                let rec = crate::parse_line(line, 1);
                if matches!(rec.event, crate::Event::Retraction(_)) {
                    inputs.push(rec.message.as_bytes().to_vec());
                }
            }
        }
        assert!(inputs.len() > 200, "{}", inputs.len());
        for i in &inputs {
            assert_eq!(retraction_head(i), retraction_head_grammar(i), "{i:?}");
        }
    }

    /// A stack opened once `MAX_STACKS` are kept is only counted, and its lines open and close
    /// it where a kept one's do.
    #[test]
    fn a_stack_beyond_the_kept_ones_ends_where_a_kept_one_does() {
        use crate::{Event, RankTags, Record};
        let rec = |line_no: u64, message: &'static str, event: Event<'static>| Record {
            line_no,
            timestamp: None,
            ranks: RankTags::default(),
            message,
            event,
        };
        // a traceback, its frames, an exception line, then a line after it
        let lines: [(&str, Event<'static>); 6] = [
            ("Traceback (most recent call last):", Event::TracebackStart),
            ("  File \"/x/sglang/a.py\", line 7, in run", Event::Other),
            ("  File \"/x/b.py\", line 9, in f", Event::Other),
            ("    f()", Event::Other),
            ("RuntimeError: CUDA error:  bad  ", Event::Other),
            ("  File \"/x/c.py\", line 1, in g", Event::Other),
        ];
        let mut c = StackCollector::new();
        let mut open_after = Vec::new();
        let mut n = 0;
        for _ in 0..MAX_STACKS + 3 {
            let mut seen = Vec::new();
            for (msg, ev) in &lines {
                n += 1;
                c.push(&rec(n, msg, ev.clone()));
                seen.push(c.is_open());
            }
            open_after.push(seen);
        }
        assert!(
            open_after.iter().all(|s| *s == open_after[0]),
            "{open_after:?}"
        );
        assert_eq!(open_after[0], [true, true, true, true, false, false]);
        assert_eq!(c.dropped, 3);
        let done = c.finish();
        assert_eq!(done.len(), MAX_STACKS);
        let last = &done[MAX_STACKS - 1];
        assert_eq!(last.first_line, (MAX_STACKS as u64 - 1) * 6 + 1);
        assert_eq!(last.last_line, last.first_line + 4);
        assert_eq!(last.exception.as_deref(), Some("RuntimeError"));
        assert_eq!(last.message.as_deref(), Some("CUDA error:  bad"));
        assert_eq!(last.total_frames, 2);
        assert_eq!(
            last.frames[0],
            Frame {
                function: "run".into(),
                file: "/x/sglang/a.py".into(),
                line: Some(7)
            }
        );
    }
}
