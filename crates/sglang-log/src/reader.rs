//! Buffered line reader over plain files, gzip files and stdin, feeding [`crate::parse_line`].

use crate::line::{LineCache, parse_clean_line_into, parse_line_cached};
use crate::{Event, Record, Rejection};
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use thiserror::Error;

/// How many malformed / partial lines [`ParseStats`] keeps verbatim.
pub const KEPT_LINES: usize = 100;

/// The reader's buffer starts this small (bytes), so a short input (a pasted excerpt, one
/// fuzz case, a chunk of a tiny file) costs no 256 KiB allocation and zeroing…
const INITIAL_BUF: usize = 8 * 1024;

/// …and doubles up to this size (bytes) while reads fill it, so a large file is still read in
/// 256 KiB blocks after five reads.
const STEADY_BUF: usize = 256 * 1024;

/// Longest line the reader holds (bytes, 1 MiB): a line that reaches it without a newline is
/// delivered as [`Event::Malformed`] with the reason "line longer than 1 MiB" and its first
/// bytes as the excerpt, and the rest of it is skipped up to the next newline. This bounds the
/// reader's memory on a sparse file, a NUL-filled rotation hole or a gzip bomb of one line.
pub const MAX_LINE: usize = 1 << 20;

/// The reason of a line cut at [`MAX_LINE`].
pub const LONG_LINE_REASON: &str = "line longer than 1 MiB";

/// The reason of a batch line that the input ends inside (no newline after it, outside live
/// mode): a copy of a log being written, or a file cut by `head -c`, ends mid-line, and the
/// line's last value may be cut short (`gen throughput (token/s): 7` for `783.97`), which no
/// check on the value can tell. One such line read as a reading outweighed thousands in a
/// step-time fit (a fresh user's trial, 2026-12-04: the best change flipped to a smaller
/// pool at "+621%"), so it is set aside, counted and reported like any malformed line.
pub const CUT_LAST_LINE_REASON: &str =
    "the input ends inside this batch line (no newline after it): its last value may be cut";

/// Bytes of a line the excerpt of a malformed line is taken from.
const EXCERPT_BYTES: usize = 640;

/// Errors from opening or reading a log. Parsing itself never fails: bad lines are counted in
/// [`ParseStats`].
#[derive(Debug, Error)]
pub enum ReadError {
    /// The file could not be opened (missing, no permission, …).
    #[error("cannot open {path}: {source}", path = path.display())]
    Open {
        /// The path given.
        path: PathBuf,
        /// The operating-system error.
        source: io::Error,
    },
    /// Reading failed after `line_no` complete lines.
    #[error("read error in {path} after line {line_no}: {source}", path = path.display())]
    Read {
        /// The path given (or the reader's name).
        path: PathBuf,
        /// Number of lines delivered before the error.
        line_no: u64,
        /// The I/O error.
        source: io::Error,
        /// Counts of the lines this call delivered before the error; `held_back_bytes` is the
        /// unterminated line cut by the error, which was not delivered.
        delivered: Box<ParseStats>,
    },
    /// Decompressing a gzip stream failed (corrupt or truncated file).
    #[error("gzip error in {path} after line {line_no}, near compressed byte {compressed_offset}: {source}", path = path.display())]
    Gzip {
        /// The path given.
        path: PathBuf,
        /// Number of lines delivered before the error.
        line_no: u64,
        /// Compressed bytes consumed by the decoder when the error surfaced (bytes).
        compressed_offset: u64,
        /// The decoder's error.
        source: io::Error,
        /// Counts of the lines this call delivered before the error; `held_back_bytes` is the
        /// unterminated line cut by the error, which was not delivered.
        delivered: Box<ParseStats>,
    },
    /// The path is a directory.
    #[error("{path} is a directory, not a log file", path = path.display())]
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
}

/// One malformed (or partially parsed) line, kept for the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MalformedLine {
    /// 1-based line number.
    pub line_no: u64,
    /// Why the line was rejected.
    pub reason: &'static str,
    /// The first 160 characters of the line (invalid UTF-8 replaced by U+FFFD).
    pub excerpt: String,
}

/// One batch-line field whose value was set aside as impossible (see [`crate::values`]),
/// kept for the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectedValue {
    /// 1-based line number.
    pub line_no: u64,
    /// The key as printed, e.g. `gen throughput (token/s)`.
    pub key: String,
    /// The value as printed (its first 40 characters), e.g. `NaN`.
    pub value: String,
    /// Why it was set aside.
    pub reason: Rejection,
}

/// Counts of what a read produced; reaches the report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParseStats {
    /// Lines read (each `\n`-terminated line, plus a final unterminated one unless held back).
    pub lines: u64,
    /// Bytes read (decompressed), line terminators included. Unit: bytes.
    pub bytes: u64,
    /// [`Event::Batch`] records.
    pub batch_lines: u64,
    /// Batch records of kind prefill.
    pub prefill_lines: u64,
    /// Batch records of kind decode.
    pub decode_lines: u64,
    /// [`Event::Retraction`] records (one per rank that printed it).
    pub retraction_lines: u64,
    /// Records of no SGLang output: [`Event::Other`] and the lines any program prints
    /// ([`Event::is_free_text`]: access, out-of-memory, NCCL lines), bare tracebacks
    /// ([`Event::TracebackStart`]) included.
    pub other_lines: u64,
    /// [`Event::Malformed`] records.
    pub malformed_lines: u64,
    /// Records that are neither `Other` nor `Malformed`.
    pub events: u64,
    /// Batch records that had fragments which are not `key: value` (kept, with their good fields).
    pub partial_batch_lines: u64,
    /// Batch records with more than [`crate::MAX_FIELDS`] fields (extra fields dropped).
    pub overflow_batch_lines: u64,
    /// Lines cut at [`MAX_LINE`] bytes (each also counted in `malformed_lines`).
    pub long_lines: u64,
    /// Batch records with at least one field set aside as impossible (NaN, infinite, negative,
    /// out of range; [`crate::BatchLine::rejected_fields`]). Their other fields are used.
    pub rejected_lines: u64,
    /// Fields set aside, over all batch records.
    pub rejected_fields: u64,
    /// The first [`KEPT_LINES`] fields set aside, with their line numbers.
    pub rejected: Vec<RejectedValue>,
    /// The first [`KEPT_LINES`] malformed lines.
    pub malformed: Vec<MalformedLine>,
    /// The first [`KEPT_LINES`] partial batch lines.
    pub partial: Vec<MalformedLine>,
    /// Bytes of an unterminated last line held back for a later call (live mode). Unit: bytes.
    pub held_back_bytes: u64,
    /// What the input's first [`HEAD_BYTES`] look like (set by the call that read them).
    pub head: Option<HeadStats>,
}

/// How much of an input's start [`HeadStats`] describes (bytes).
pub const HEAD_BYTES: usize = 64 * 1024;

/// Byte classes of an input's first [`HEAD_BYTES`] (after decompression), enough to tell a text
/// log from a binary file given by mistake.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeadStats {
    /// Bytes looked at (at most [`HEAD_BYTES`]).
    pub bytes: u64,
    /// NUL bytes among them.
    pub nul_bytes: u64,
    /// Control bytes (other than tab, line feed, carriage return, form feed and the ESC of
    /// ANSI colours), DEL, and bytes of invalid UTF-8 among them.
    pub odd_bytes: u64,
}

impl HeadStats {
    /// Counts the classes of `head`.
    pub fn of(head: &[u8]) -> Self {
        if !head.is_ascii() {
            return Self::of_any(head);
        }
        // ASCII (a log's usual head): no invalid UTF-8; 8 bytes at a time, each byte looked
        // at only in a word that may hold a control byte or DEL
        let (words, rest) = head.as_chunks::<8>();
        let (mut nul, mut odd) = (0u64, 0u64);
        let mut count = |bytes: &[u8]| {
            for &b in bytes {
                nul += u64::from(b == 0);
                odd += u64::from(ascii_odd(b));
            }
        };
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        for w in words {
            let x = u64::from_le_bytes(*w);
            // some byte below 0x20, some byte 0x7f (no false negatives: every byte < 0x80)
            let below = x.wrapping_sub(0x20 * ONES) & !x & HIGH;
            let del = (x ^ (0x7f * ONES)).wrapping_sub(ONES) & !(x ^ (0x7f * ONES)) & HIGH;
            if below | del != 0 {
                count(w);
            }
        }
        count(rest);
        HeadStats {
            bytes: head.len() as u64,
            nul_bytes: nul,
            odd_bytes: odd,
        }
    }

    /// [`HeadStats::of`] for any bytes, UTF-8 or not.
    fn of_any(head: &[u8]) -> Self {
        let mut odd = 0u64;
        for chunk in head.utf8_chunks() {
            odd += chunk.invalid().len() as u64;
            odd += chunk.valid().bytes().filter(|&b| ascii_odd(b)).count() as u64;
        }
        HeadStats {
            bytes: head.len() as u64,
            nul_bytes: head.iter().filter(|&&b| b == 0).count() as u64,
            odd_bytes: odd,
        }
    }

    /// Why these bytes do not look like text (a log written by Python holds neither), or
    /// `None` when they do: any NUL byte, or more than 10% odd bytes.
    pub fn not_text_reason(&self) -> Option<String> {
        let within = if self.bytes >= HEAD_BYTES as u64 {
            format!("the first {} KiB", HEAD_BYTES / 1024)
        } else {
            format!("its {} bytes", self.bytes)
        };
        if self.nul_bytes > 0 {
            return Some(format!("{} NUL bytes in {within}", self.nul_bytes));
        }
        (self.odd_bytes * 10 > self.bytes).then(|| {
            format!(
                "{} control or invalid UTF-8 bytes in {within}",
                self.odd_bytes
            )
        })
    }
}

/// Whether a byte of valid UTF-8 is odd in a text log: a control byte other than tab, line
/// feed, carriage return, form feed and ESC, or DEL.
#[inline]
fn ascii_odd(b: u8) -> bool {
    (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) || b == 0x7f
}

fn excerpt(raw: &[u8]) -> String {
    let cut = &raw[..raw.len().min(EXCERPT_BYTES)];
    String::from_utf8_lossy(cut).chars().take(160).collect()
}

impl ParseStats {
    /// Adds one record (`raw` is the line it came from, used for excerpts). Use this when
    /// calling [`crate::parse_line`] directly.
    pub fn observe(&mut self, rec: &Record<'_>, raw: &[u8]) {
        self.lines += 1;
        self.bytes += raw.len() as u64;
        self.observe_event(rec, raw);
    }

    /// [`ParseStats::observe`] without the line and byte counts (the reader adds those once a
    /// block of lines): the usual clean batch line counted in place, any other record by
    /// [`ParseStats::observe_other`].
    #[inline(always)]
    fn observe_event(&mut self, rec: &Record<'_>, raw: &[u8]) {
        // the usual batch line first: counted in place; its fields looked at only when the
        // splitter left damage or a value to look at
        if let Event::Batch(b) = &rec.event {
            self.events += 1;
            self.batch_lines += 1;
            match b.kind {
                crate::BatchKind::Prefill => self.prefill_lines += 1,
                crate::BatchKind::Decode => self.decode_lines += 1,
            }
            if !b.is_clean() {
                self.observe_batch_fields(b, rec.line_no, raw);
            }
            return;
        }
        self.observe_other(rec, raw);
    }

    /// The damage and the values set aside of a batch line that is not clean (kept out of
    /// line, as are the copies of what is kept: the usual call saves few registers).
    #[inline(never)]
    fn observe_batch_fields(&mut self, b: &crate::BatchLine<'_>, line_no: u64, raw: &[u8]) {
        if b.broken_fields() > 0 {
            self.partial_batch_lines += 1;
            if self.partial.len() < KEPT_LINES {
                self.keep_partial(line_no, raw);
            }
        }
        if b.overflow_fields() > 0 {
            self.overflow_batch_lines += 1;
        }
        let before = self.rejected_fields;
        for r in b.rejected_fields() {
            self.rejected_fields += 1;
            if self.rejected.len() < KEPT_LINES {
                self.keep_rejected(line_no, &r);
            }
        }
        if self.rejected_fields > before {
            self.rejected_lines += 1;
        }
    }

    #[cold]
    #[inline(never)]
    fn keep_partial(&mut self, line_no: u64, raw: &[u8]) {
        self.partial.push(MalformedLine {
            line_no,
            reason: "batch line with fragments that are not key: value",
            excerpt: excerpt(raw),
        });
    }

    #[cold]
    #[inline(never)]
    fn keep_rejected(&mut self, line_no: u64, r: &crate::RejectedField<'_>) {
        self.rejected.push(RejectedValue {
            line_no,
            key: r.key.to_string(),
            value: r.value.chars().take(40).collect(),
            reason: r.reason,
        });
    }

    /// The counts of a record that is not a batch line (kept out of line: its many cases
    /// would make every line's call save and restore registers).
    #[inline(never)]
    fn observe_other(&mut self, rec: &Record<'_>, raw: &[u8]) {
        match &rec.event {
            // a bare traceback is any Python program's, as are access, OOM and NCCL lines
            e if e.is_free_text() || matches!(e, Event::TracebackStart) => self.other_lines += 1,
            Event::Malformed { reason } => {
                self.malformed_lines += 1;
                if self.malformed.len() < KEPT_LINES {
                    self.malformed.push(MalformedLine {
                        line_no: rec.line_no,
                        reason,
                        excerpt: excerpt(raw),
                    });
                }
            }
            // a batch line is counted by `observe_event`
            Event::Retraction(_) => {
                self.events += 1;
                self.retraction_lines += 1;
            }
            _ => self.events += 1,
        }
    }

    /// Adds `lines` to the line number of every kept line (counts of a part of a file read on
    /// its own, made the file's: see [`crate::parallel::parse_ranges_in_order`]).
    pub fn shift_lines(&mut self, lines: u64) {
        for m in self.malformed.iter_mut().chain(self.partial.iter_mut()) {
            m.line_no += lines;
        }
        for r in &mut self.rejected {
            r.line_no += lines;
        }
    }

    /// Adds the counts of `other` (e.g. from a later call in live mode).
    pub fn merge(&mut self, other: &ParseStats) {
        self.lines += other.lines;
        self.bytes += other.bytes;
        self.batch_lines += other.batch_lines;
        self.prefill_lines += other.prefill_lines;
        self.decode_lines += other.decode_lines;
        self.retraction_lines += other.retraction_lines;
        self.other_lines += other.other_lines;
        self.malformed_lines += other.malformed_lines;
        self.events += other.events;
        self.partial_batch_lines += other.partial_batch_lines;
        self.overflow_batch_lines += other.overflow_batch_lines;
        self.long_lines += other.long_lines;
        self.rejected_lines += other.rejected_lines;
        self.rejected_fields += other.rejected_fields;
        for r in &other.rejected {
            if self.rejected.len() < KEPT_LINES {
                self.rejected.push(r.clone());
            }
        }
        for m in &other.malformed {
            if self.malformed.len() < KEPT_LINES {
                self.malformed.push(m.clone());
            }
        }
        for m in &other.partial {
            if self.partial.len() < KEPT_LINES {
                self.partial.push(m.clone());
            }
        }
        self.held_back_bytes = other.held_back_bytes;
        self.head = self.head.or(other.head);
    }
}

/// A `BufRead` that counts the bytes its consumer (a gzip decoder) has used: the compressed
/// byte offset that read errors report.
struct CountingBufRead<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: BufRead> CountingBufRead<R> {
    /// Wraps `inner`; the counter (bytes consumed so far) can be read while the wrapper is in use.
    fn new(inner: R) -> (Self, Arc<AtomicU64>) {
        let count = Arc::new(AtomicU64::new(0));
        (
            CountingBufRead {
                inner,
                count: Arc::clone(&count),
            },
            count,
        )
    }
}

/// A log input opened and sniffed, before any decoding.
struct LogInput {
    /// The raw bytes, buffered (64 KiB); nothing consumed yet.
    reader: BufReader<Box<dyn Read + Send>>,
    /// Whether the input starts with the gzip magic bytes `1f 8b`.
    gzip: bool,
}

impl LogInput {
    /// Opens `path` (`-` means stdin) and looks at its first bytes.
    ///
    /// Errors: [`ReadError::Open`] when the file cannot be opened or its first bytes cannot be
    /// read, [`ReadError::NotAFile`] for a directory.
    fn open(path: &Path) -> Result<LogInput, ReadError> {
        let open_err = |source| ReadError::Open {
            path: path.to_path_buf(),
            source,
        };
        let raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
            Box::new(io::stdin())
        } else {
            let meta = std::fs::metadata(path).map_err(open_err)?;
            if meta.is_dir() {
                return Err(ReadError::NotAFile {
                    path: path.to_path_buf(),
                });
            }
            Box::new(std::fs::File::open(path).map_err(open_err)?)
        };
        let mut reader = BufReader::with_capacity(64 * 1024, raw);
        let head = loop {
            match reader.fill_buf() {
                Ok(h) => break h,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(open_err(e)),
            }
        };
        let gzip = head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b;
        Ok(LogInput { reader, gzip })
    }
}

/// Bytes of one block [`Pipelined`] hands over (256 KiB).
const PIPE_BLOCK: usize = 256 * 1024;
/// Blocks in flight between [`Pipelined`]'s thread and its reader: memory stays at most
/// `(PIPE_DEPTH + 2) × PIPE_BLOCK` (1.5 MiB).
const PIPE_DEPTH: usize = 4;

/// A reader whose bytes are produced on a thread of its own (a gzip decoder) and handed over
/// in blocks through a bounded channel, so that decompressing and parsing a `.gz` log run on
/// two cores; the emptied blocks go back to the thread to be filled again (no allocation per
/// block). The bytes, their order and the first error are exactly those of the inner reader:
/// the thread sends what it read before an error, then the error, then stops. Dropping the
/// reader stops the thread (its next send fails).
struct Pipelined {
    full: std::sync::mpsc::Receiver<io::Result<(Vec<u8>, usize)>>,
    empty: std::sync::mpsc::SyncSender<Vec<u8>>,
    /// The block being read, its filled length and the read position.
    cur: Vec<u8>,
    len: usize,
    pos: usize,
    /// The thread ended (end of input or an error, already returned).
    done: bool,
}

impl Pipelined {
    fn spawn<R: Read + Send + 'static>(mut inner: R) -> Self {
        let (full_tx, full) = std::sync::mpsc::sync_channel(PIPE_DEPTH);
        let (empty, empty_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(PIPE_DEPTH + 1);
        std::thread::spawn(move || {
            loop {
                let mut block = empty_rx.try_recv().unwrap_or_else(|_| vec![0; PIPE_BLOCK]);
                // fill the block (a decoder returns a few KiB per call), or up to the end / an error
                let mut n = 0;
                let mut failed = None;
                while n < block.len() {
                    match inner.read(&mut block[n..]) {
                        Ok(0) => break,
                        Ok(k) => n += k,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                let end = n < block.len();
                if n > 0 && full_tx.send(Ok((block, n))).is_err() {
                    return;
                }
                if let Some(e) = failed {
                    let _ = full_tx.send(Err(e));
                    return;
                }
                if end {
                    return;
                }
            }
        });
        Pipelined {
            full,
            empty,
            cur: Vec::new(),
            len: 0,
            pos: 0,
            done: false,
        }
    }
}

impl Read for Pipelined {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.len {
            if self.done {
                return Ok(0);
            }
            match self.full.recv() {
                Ok(Ok((block, n))) => {
                    let old = std::mem::replace(&mut self.cur, block);
                    if !old.is_empty() {
                        // the thread may be gone (it sent its last block): nothing to recycle into
                        let _ = self.empty.try_send(old);
                    }
                    (self.len, self.pos) = (n, 0);
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                // the thread ended: end of input
                Err(_) => self.done = true,
            }
        }
        let k = buf.len().min(self.len - self.pos);
        buf[..k].copy_from_slice(&self.cur[self.pos..self.pos + k]);
        self.pos += k;
        Ok(k)
    }
}

impl<R: BufRead> Read for CountingBufRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for CountingBufRead<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.count.fetch_add(amt as u64, Ordering::Relaxed);
        self.inner.consume(amt);
    }
}

/// What one pass over a block of whole lines found (see [`newline_bits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BlockScan {
    /// Every byte is below 0x80 (then the block needs no UTF-8 check).
    ascii: bool,
    /// Some byte is `\r` (then the block takes the line-by-line path).
    cr: bool,
    /// Some byte is ESC (0x1b: ANSI colours may need trimming).
    esc: bool,
}

/// Sets `out` to the newline bitmap of `block` (bit `i` of word `w` set where byte `64 w + i`
/// is `\n`) and says whether the block is all ASCII, holds a `\r`, holds an ESC. One pass of
/// 32-byte compares (AVX2, detected at run time; 16-byte SSE2 compares otherwise) replaces a
/// `memchr` call per line, the block's UTF-8 check and its `\r` and ESC searches.
fn newline_bits(block: &[u8], out: &mut Vec<u64>) -> BlockScan {
    let full = block.len() / 64;
    // sized, not cleared: blocks are mostly of one size, so no zero-fill from block to block
    // (every word is written below)
    let words = block.len().div_ceil(64);
    out.truncate(words);
    out.resize(words, 0);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked just above).
        return unsafe { newline_bits_avx2(block, out, full) };
    }
    newline_bits_base(block, out, full)
}

/// [`newline_bits`] with 16-byte SSE2 compares (or portable code); `out` has one word per 64
/// bytes of `block`.
fn newline_bits_base(block: &[u8], out: &mut [u64], full: usize) -> BlockScan {
    let mut acc = Acc::default();
    for (o, c) in out.iter_mut().zip(block.chunks_exact(64)) {
        // ok: `chunks_exact(64)` yields 64-byte slices
        let c: &[u8; 64] = c.try_into().unwrap_or(&[0; 64]);
        *o = scan64(c, &mut acc);
    }
    let rest = &block[64 * full..];
    if let Some(o) = out.get_mut(full) {
        let mut c = [0u8; 64];
        c[..rest.len()].copy_from_slice(rest);
        *o = scan64(&c, &mut acc);
    }
    BlockScan {
        ascii: acc.or & 0x80 == 0,
        cr: acc.cr,
        esc: acc.esc,
    }
}

/// [`newline_bits`] with 32-byte compares; `full` is `block.len() / 64`, `out` has one word per
/// 64 bytes of `block`.
///
/// A `\r` or an ESC is found by one table look-up per 32 bytes (`vpshufb` by the low nibble:
/// a byte is one of the two exactly when it equals its entry), so both cost one compare; which
/// of them the block holds is told apart after the pass, by a search for `\r`, only when one
/// was seen.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn newline_bits_avx2(block: &[u8], out: &mut [u64], full: usize) -> BlockScan {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8, _mm256_setr_epi8, _mm256_setzero_si256, _mm256_shuffle_epi8,
    };
    let nl = _mm256_set1_epi8(b'\n' as i8);
    // entry `i`: the byte of low nibble `i` that is looked for (`\r` = 0x0d, ESC = 0x1b), else
    // 0x80, which no byte it is compared with equals (a byte with its top bit set looks up 0)
    const X: i8 = i8::MIN;
    #[rustfmt::skip]
    let table = _mm256_setr_epi8(
        X, X, X, X, X, X, X, X, X, X, X, 0x1b, X, 0x0d, X, X,
        X, X, X, X, X, X, X, X, X, X, X, 0x1b, X, 0x0d, X, X,
    );
    let (mut any, mut special) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    let mut step = |c: &[u8; 64]| -> u64 {
        let p = c.as_ptr() as *const __m256i;
        // SAFETY: two unaligned 32-byte loads read `c[0..64]`, inside the array.
        let (v0, v1) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
        let m0 = _mm256_movemask_epi8(_mm256_cmpeq_epi8(v0, nl)) as u32;
        let m1 = _mm256_movemask_epi8(_mm256_cmpeq_epi8(v1, nl)) as u32;
        any = _mm256_or_si256(any, _mm256_or_si256(v0, v1));
        let s0 = _mm256_cmpeq_epi8(_mm256_shuffle_epi8(table, v0), v0);
        let s1 = _mm256_cmpeq_epi8(_mm256_shuffle_epi8(table, v1), v1);
        special = _mm256_or_si256(special, _mm256_or_si256(s0, s1));
        u64::from(m0) | u64::from(m1) << 32
    };
    // four 64-byte chunks a turn (`as_chunks`: whole chunks, so no bounds checks)
    let (quads, _) = block[..64 * full].as_chunks::<256>();
    let (out_quads, _) = out[..full].as_chunks_mut::<4>();
    for (o, c) in out_quads.iter_mut().zip(quads) {
        let (c01, c23) = c.split_at(128);
        let ((c0, c1), (c2, c3)) = (c01.split_at(64), c23.split_at(64));
        // ok: `split_at` of 256 bytes at 128, then at 64, gives four 64-byte quarters
        o[0] = step(c0.try_into().unwrap_or(&[0; 64]));
        o[1] = step(c1.try_into().unwrap_or(&[0; 64]));
        o[2] = step(c2.try_into().unwrap_or(&[0; 64]));
        o[3] = step(c3.try_into().unwrap_or(&[0; 64]));
    }
    for i in full / 4 * 4..full {
        // ok: `i < full`, so `block[64 * i..64 * i + 64]` is inside the block
        let c: &[u8; 64] = block[64 * i..64 * i + 64].try_into().unwrap_or(&[0; 64]);
        out[i] = step(c);
    }
    let rest = &block[64 * full..];
    if let Some(o) = out.get_mut(full) {
        let mut c = [0u8; 64];
        c[..rest.len()].copy_from_slice(rest);
        *o = step(&c);
    }
    let (cr, esc) = if _mm256_movemask_epi8(special) == 0 {
        (false, false)
    } else {
        // a `\r` or an ESC: which (a block with a `\r` is read line by line, so its ESC is
        // looked for only to say it exactly)
        let cr = memchr::memchr(b'\r', block).is_some();
        (cr, !cr || memchr::memchr(0x1b, block).is_some())
    };
    BlockScan {
        ascii: _mm256_movemask_epi8(any) == 0,
        cr,
        esc,
    }
}

/// What [`scan64`] accumulates over a block: the OR of all bytes, whether a `\r` or an ESC
/// was seen.
#[derive(Default)]
struct Acc {
    or: u8,
    cr: bool,
    esc: bool,
}

/// Newline mask of one 64-byte chunk; folds its bytes into `acc`.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn scan64(c: &[u8; 64], acc: &mut Acc) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86_64 baseline (this cfg); the four unaligned 16-byte loads
    // read `c[0..64]`, inside the array.
    unsafe {
        let p = c.as_ptr() as *const __m128i;
        let (v0, v1, v2, v3) = (
            _mm_loadu_si128(p),
            _mm_loadu_si128(p.add(1)),
            _mm_loadu_si128(p.add(2)),
            _mm_loadu_si128(p.add(3)),
        );
        let eq = |x: u8| {
            let x = _mm_set1_epi8(x as i8);
            let m = |v| u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(v, x)) as u16);
            m(v0) | m(v1) << 16 | m(v2) << 32 | m(v3) << 48
        };
        let any = _mm_or_si128(_mm_or_si128(v0, v1), _mm_or_si128(v2, v3));
        // nonzero iff some byte has its top bit set
        if _mm_movemask_epi8(any) != 0 {
            acc.or |= 0x80;
        }
        acc.cr |= eq(b'\r') != 0;
        acc.esc |= eq(0x1b) != 0;
        eq(b'\n')
    }
}

/// Newline mask of one 64-byte chunk; folds its bytes into `acc` (portable form).
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn scan64(c: &[u8; 64], acc: &mut Acc) -> u64 {
    let mut mask = 0u64;
    for (i, &b) in c.iter().enumerate() {
        mask |= u64::from(b == b'\n') << i;
        acc.or |= b;
        acc.cr |= b == b'\r';
        acc.esc |= b == 0x1b;
    }
    mask
}

/// Reads a log line by line and parses every line.
///
/// Lines are split with `memchr` in one reusable buffer that grows to fit the longest line, up
/// to [`MAX_LINE`] (1 MiB): a longer line is delivered as [`Event::Malformed`] ("line longer
/// than 1 MiB", with its line number and first bytes) and the rest of it is skipped, so memory
/// stays bounded on any input. A long line read in many pieces (a pipe, a FIFO) is searched for
/// its newline once, not once per read. Records borrow from that buffer and live only for the
/// callback. In live mode ([`LogReader::live`]) an unterminated last line is held back and
/// completed by the next [`LogReader::for_each`] call, so a half-written line of a growing log is
/// never parsed.
pub struct LogReader<R> {
    name: PathBuf,
    inner: R,
    buf: Vec<u8>,
    /// Start of unconsumed data in `buf`.
    start: usize,
    /// End of valid data in `buf`.
    end: usize,
    line_no: u64,
    live: bool,
    gz_offset: Option<Arc<AtomicU64>>,
    /// What the previous lines looked like (stamp, tags, key order): makes the next one cheap.
    cache: LineCache,
    /// Newline bitmap of the block being parsed (see [`newline_bits`]).
    nl_bits: Vec<u64>,
    /// The input's first bytes, kept until [`HEAD_BYTES`] are seen or the input ends.
    head: Vec<u8>,
    /// Whether [`HeadStats`] were reported.
    head_done: bool,
    /// `buf[start..scanned]` holds no `\n` (searched already).
    scanned: usize,
    /// The rest of a line cut at [`MAX_LINE`] is being skipped.
    skipping: bool,
}

impl LogReader<Box<dyn Read>> {
    /// Opens `path` (`-` means stdin). Gzip input is detected by its magic bytes `1f 8b` and
    /// decoded with a multi-member decoder (concatenated `.gz` files work), on a thread of its
    /// own that hands the decoded bytes over in 256 KiB blocks (at most 1.5 MiB in flight), so
    /// decompressing and parsing use two cores.
    ///
    /// Errors: [`ReadError::Open`] when the file cannot be opened or its first bytes cannot be
    /// read, [`ReadError::NotAFile`] for a directory.
    pub fn open(path: &Path) -> Result<LogReader<Box<dyn Read>>, ReadError> {
        let input = LogInput::open(path)?;
        let br = input.reader;
        let mut reader = if input.gzip {
            let (counting, count) = CountingBufRead::new(br);
            let dec: Box<dyn Read> = Box::new(Pipelined::spawn(
                flate2::bufread::MultiGzDecoder::new(counting),
            ));
            let mut r = LogReader::from_reader(path.display().to_string(), dec);
            r.gz_offset = Some(count);
            r
        } else {
            LogReader::from_reader(path.display().to_string(), Box::new(br) as Box<dyn Read>)
        };
        reader.name = path.to_path_buf();
        Ok(reader)
    }
}

impl<R: Read> LogReader<R> {
    /// Wraps any reader; `name` is used in errors. The input is taken as plain text (no gzip
    /// detection; wrap it in a decoder yourself).
    pub fn from_reader(name: impl Into<String>, r: R) -> Self {
        LogReader {
            name: PathBuf::from(name.into()),
            inner: r,
            buf: vec![0; INITIAL_BUF],
            start: 0,
            end: 0,
            line_no: 0,
            live: false,
            gz_offset: None,
            cache: LineCache::new(true),
            nl_bits: Vec::new(),
            head: Vec::new(),
            head_done: false,
            scanned: 0,
            skipping: false,
        }
    }

    /// Whether the input's first bytes are looked at for [`HeadStats`] (default: yes; a chunk
    /// of a file after the first needs none).
    pub(crate) fn with_head(mut self, head: bool) -> Self {
        self.head_done = !head;
        self
    }

    /// Reads `inner` next, from its first line (numbered 1 again), with this reader's buffer,
    /// newline bitmap and line cache: the next chunk of a file parsed in parallel costs no new
    /// allocation (a fresh 256 KiB buffer per chunk is page faults and kernel page clearing).
    /// `head`: whether the input's first bytes are looked at for [`HeadStats`] (only the first
    /// chunk of a file needs them). The cache only short-cuts work whose result is known, so
    /// what came before does not change a record.
    pub(crate) fn restart(&mut self, inner: R, head: bool) {
        self.inner = inner;
        self.start = 0;
        self.end = 0;
        self.scanned = 0;
        self.line_no = 0;
        self.skipping = false;
        self.gz_offset = None;
        self.head.clear();
        self.head_done = !head;
    }

    /// Puts `inner` in place of the input and returns the input it replaces, keeping
    /// everything else: the line numbers, an unterminated last line held back in live mode,
    /// the caches. A live reader of one of many followed files can so give its file back
    /// between reads (an empty reader in its place) and take it up again reopened at the
    /// offset it reached ([`ParseStats::bytes`] and [`ParseStats::held_back_bytes`] of its
    /// reads say where), holding no descriptor meanwhile.
    pub fn replace_input(&mut self, inner: R) -> R {
        std::mem::replace(&mut self.inner, inner)
    }

    /// Live mode: at end of input, keep an unterminated last line back (a log being written)
    /// instead of parsing it; the next [`LogReader::for_each`] call continues from it.
    pub fn live(mut self, live: bool) -> Self {
        self.live = live;
        self
    }

    /// Numbers the lines as if `lines` lines came before this input (a chunk of a larger file,
    /// see [`crate::parallel`]): the first record gets line number `lines + 1`.
    pub fn starting_after(mut self, lines: u64) -> Self {
        self.line_no = lines;
        self
    }

    /// Number of lines delivered so far (across calls).
    pub fn lines_read(&self) -> u64 {
        self.line_no
    }

    /// Reads to the end of the input and calls `f` for every record, in order. Returns the
    /// counts of this call.
    ///
    /// Errors: [`ReadError::Read`] or [`ReadError::Gzip`] when the input fails mid-way; the
    /// records delivered before the error stay delivered and the error carries their counts,
    /// so a caller can diagnose a truncated file up to the cut. A line cut by the error is
    /// never delivered.
    pub fn for_each<F: FnMut(&Record<'_>)>(&mut self, mut f: F) -> Result<ParseStats, ReadError> {
        self.for_each_raw(|rec, _| f(rec))
    }

    /// [`LogReader::for_each`] that also hands over the bytes of each record's line (without
    /// its `\n`), e.g. to keep a rare line and parse it again later with
    /// [`crate::parse_line`], which gives the same record. For a line cut at [`MAX_LINE`] (an
    /// [`Event::Malformed`] record) they are its first bytes.
    ///
    /// # Errors
    /// As [`LogReader::for_each`].
    pub fn for_each_raw<F: FnMut(&Record<'_>, &[u8])>(
        &mut self,
        mut f: F,
    ) -> Result<ParseStats, ReadError> {
        let mut stats = ParseStats::default();
        // the last read filled the buffer (below the steady size): grow it before the next
        let mut grow = false;
        loop {
            if self.skipping {
                // the rest of an over-long line (already delivered as malformed): dropped
                let window = &self.buf[self.start..self.end];
                match memchr::memchr(b'\n', window) {
                    Some(i) => {
                        stats.bytes += i as u64 + 1;
                        self.start += i + 1;
                        self.skipping = false;
                    }
                    None => {
                        stats.bytes += window.len() as u64;
                        self.start = self.end;
                    }
                }
                self.scanned = self.start;
            }
            // deliver every complete line in buf[start..end]
            let mut pos = self.start;
            // bytes before `scanned` are known to hold no `\n` (a long line read in pieces
            // is searched once, not once per read)
            let from = self.scanned.max(pos);
            let window = &self.buf[pos..self.end];
            // Fast path: a block of whole lines that is valid UTF-8 and has no `\r` is checked
            // once, not line by line.
            let block = memchr::memrchr(b'\n', &self.buf[from..self.end])
                .map(|i| &window[..=from - pos + i]);
            // one pass: where the `\n`s are, whether the block is all ASCII, holds `\r` or ESC
            let scan = block.map(|b| newline_bits(b, &mut self.nl_bits));
            if let Some(block) = block
                && let Some(scan) = scan
                && !scan.cr
            {
                let text = if scan.ascii {
                    // SAFETY: every byte of `block` is below 0x80 (checked just above), and
                    // ASCII is valid UTF-8.
                    Some(unsafe { std::str::from_utf8_unchecked(block) })
                } else {
                    std::str::from_utf8(block).ok()
                };
                if let Some(text) = text {
                    // no ESC in the block: no line has ANSI colours to trim
                    self.cache.no_esc = !scan.esc;
                    let mut rec = Record {
                        line_no: 0,
                        timestamp: None,
                        ranks: Default::default(),
                        message: "",
                        event: Event::Other,
                    };
                    let bits = &self.nl_bits[..];
                    let mut line_no = self.line_no;
                    let (mut a, mut w, mut m) = (0, 0, 0u64);
                    // the block ends with its last `\n`: the loop ends after that line
                    let last = block.len() - 1;
                    loop {
                        // the next word with a newline: most 64-byte words hold none or one
                        while m == 0 {
                            debug_assert!(w < bits.len());
                            // SAFETY: a line is left (the one ending at `last` has not been
                            // read: the loop ends after it), so a set bit lies in word `w` or
                            // after it, and `bits` has a word for every 64 bytes of `block`:
                            // `w < bits.len()`.
                            m = unsafe { *bits.get_unchecked(w) };
                            w += 1;
                        }
                        let nl = 64 * (w - 1) + m.trailing_zeros() as usize;
                        m &= m - 1;
                        line_no += 1;
                        debug_assert!(
                            a <= nl && text.is_char_boundary(a) && text.is_char_boundary(nl)
                        );
                        // SAFETY: `a` is 0 or just after a `\n` of `block` and `nl` is the
                        // next `\n` (bits of `newline_bits` over `block`, none past its end),
                        // so `a <= nl <= text.len()`, and both are char boundaries: `\n` is
                        // ASCII and `text` is valid UTF-8.
                        let line = unsafe { text.get_unchecked(a..nl) };
                        parse_clean_line_into(line, line_no, &mut self.cache, &mut rec);
                        f(&rec, line.as_bytes());
                        stats.observe_event(&rec, line.as_bytes());
                        if nl == last {
                            break;
                        }
                        a = nl + 1;
                    }
                    // every line of the block and its `\n`, counted once
                    stats.lines += line_no - self.line_no;
                    stats.bytes += block.len() as u64;
                    self.line_no = line_no;
                    self.cache.no_esc = false;
                    pos += block.len();
                }
            }
            loop {
                let from = pos.max(self.scanned);
                let Some(i) = memchr::memchr(b'\n', &self.buf[from..self.end]) else {
                    break;
                };
                let nl = from + i;
                self.line_no += 1;
                let raw = &self.buf[pos..nl];
                let rec = parse_line_cached(raw, self.line_no, &mut self.cache);
                f(&rec, raw);
                stats.observe(&rec, raw);
                stats.bytes += 1; // the '\n'
                pos = nl + 1;
            }
            self.start = pos;
            // make room: move the partial line to the front, grow if it fills the buffer
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            self.scanned = self.end;
            if self.end - self.start >= MAX_LINE {
                self.cap_long_line(&mut stats, &mut f);
            }
            if self.end == self.buf.len() {
                let new_len = self.buf.len() * 2;
                self.buf.resize(new_len, 0);
            } else if grow {
                // the last read filled the buffer: the input is large, read bigger blocks. A new
                // buffer (zeroed pages) takes the partial line over: no copy of the bytes already
                // parsed, as growing the old one would make
                let mut bigger = vec![0; (self.buf.len() * 2).min(STEADY_BUF)];
                bigger[..self.end].copy_from_slice(&self.buf[..self.end]);
                self.buf = bigger;
            }
            let n = loop {
                match self.inner.read(&mut self.buf[self.end..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(source) => {
                        // The unterminated line in the buffer was cut by the error: not delivered.
                        stats.held_back_bytes = (self.end - self.start) as u64;
                        self.finish_head(&mut stats);
                        return Err(self.error(source, stats));
                    }
                }
            };
            if n == 0 {
                break;
            }
            let filled = self.end + n == self.buf.len();
            if !self.head_done {
                let take = (HEAD_BYTES - self.head.len()).min(n);
                self.head
                    .extend_from_slice(&self.buf[self.end..self.end + take]);
                if self.head.len() == HEAD_BYTES {
                    self.finish_head(&mut stats);
                }
            }
            self.end += n;
            grow = filled && self.buf.len() < STEADY_BUF;
        }
        self.finish_head(&mut stats);
        if self.end > self.start {
            if self.live {
                stats.held_back_bytes = (self.end - self.start) as u64;
            } else {
                self.line_no += 1;
                let raw = &self.buf[self.start..self.end];
                let mut rec = parse_line_cached(raw, self.line_no, &mut self.cache);
                if matches!(rec.event, Event::Batch(_)) {
                    rec.event = Event::Malformed {
                        reason: CUT_LAST_LINE_REASON,
                    };
                }
                f(&rec, raw);
                stats.observe(&rec, raw);
                self.start = 0;
                self.end = 0;
            }
        }
        Ok(stats)
    }

    /// The partial line in `buf[start..end]` reached [`MAX_LINE`] bytes without a newline:
    /// deliver it now as [`Event::Malformed`] ("line longer than 1 MiB", its first bytes kept
    /// as the excerpt and, as far as they are UTF-8, as the message: what the line is, a
    /// one-line JSON report say, shows there), drop its bytes, and skip the rest of it up to
    /// the next newline.
    fn cap_long_line<F: FnMut(&Record<'_>, &[u8])>(&mut self, stats: &mut ParseStats, f: &mut F) {
        self.line_no += 1;
        let raw = &self.buf[self.start..self.end];
        let head = &raw[..raw.len().min(EXCERPT_BYTES)];
        let message = match std::str::from_utf8(head) {
            Ok(s) => s,
            Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
        };
        let rec = Record {
            line_no: self.line_no,
            timestamp: None,
            ranks: Default::default(),
            message,
            event: Event::Malformed {
                reason: LONG_LINE_REASON,
            },
        };
        f(&rec, head);
        stats.observe(&rec, head);
        stats.bytes += (raw.len() - head.len()) as u64;
        stats.long_lines += 1;
        self.start = 0;
        self.end = 0;
        self.scanned = 0;
        self.skipping = true;
    }

    /// Report the head's byte classes once, from what was seen of it.
    fn finish_head(&mut self, stats: &mut ParseStats) {
        if !self.head_done && !self.head.is_empty() {
            stats.head = Some(HeadStats::of(&self.head));
            self.head_done = true;
            self.head = Vec::new();
        }
    }

    fn error(&self, source: io::Error, delivered: ParseStats) -> ReadError {
        let delivered = Box::new(delivered);
        match &self.gz_offset {
            Some(c) => ReadError::Gzip {
                path: self.name.clone(),
                line_no: self.line_no,
                compressed_offset: c.load(Ordering::Relaxed),
                source,
                delivered,
            },
            None => ReadError::Read {
                path: self.name.clone(),
                line_no: self.line_no,
                source,
                delivered,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    /// An inner reader that hands out `data` in reads of 1..=97 bytes, then fails with
    /// `fail` when given.
    struct Odd {
        data: Vec<u8>,
        at: usize,
        step: usize,
        fail: Option<std::io::ErrorKind>,
    }

    impl std::io::Read for Odd {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.at == self.data.len() {
                return match self.fail.take() {
                    Some(k) => Err(std::io::Error::new(k, "cut")),
                    None => Ok(0),
                };
            }
            self.step = self.step % 97 + 1;
            let k = self.step.min(buf.len()).min(self.data.len() - self.at);
            buf[..k].copy_from_slice(&self.data[self.at..self.at + k]);
            self.at += k;
            Ok(k)
        }
    }

    /// Everything a reader gives until it ends or fails, read `chunk` bytes at a time.
    fn drain(r: &mut impl std::io::Read, chunk: usize) -> (Vec<u8>, Option<std::io::Error>) {
        let mut out = Vec::new();
        let mut buf = vec![0; chunk];
        loop {
            match r.read(&mut buf) {
                Ok(0) => return (out, None),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    /// The pipelined reader gives the inner reader's bytes in order, at every block boundary,
    /// and its error after exactly the bytes before it, then the end.
    #[test]
    fn pipelined_reader_is_its_inner_reader() {
        use super::{PIPE_BLOCK, Pipelined};
        for n in [
            0,
            1,
            4096,
            PIPE_BLOCK - 1,
            PIPE_BLOCK,
            PIPE_BLOCK + 1,
            5 * PIPE_BLOCK + 7,
        ] {
            let data: Vec<u8> = (0..n).map(|i| (i * 31 % 251) as u8).collect();
            for fail in [None, Some(std::io::ErrorKind::UnexpectedEof)] {
                let inner = Odd {
                    data: data.clone(),
                    at: 0,
                    step: 0,
                    fail,
                };
                let mut p = Pipelined::spawn(inner);
                let (got, err) = drain(&mut p, 1000);
                assert!(
                    got == data,
                    "{n} bytes, fail {fail:?}: {} bytes back",
                    got.len()
                );
                assert_eq!(err.map(|e| e.kind()), fail, "{n} bytes");
                // after the end or the error: the end, for good
                let mut one = [0u8; 1];
                assert_eq!(std::io::Read::read(&mut p, &mut one).unwrap(), 0);
            }
        }
        // dropped half-way: no hang, the thread stops at its next send
        let inner = Odd {
            data: vec![b'x'; 20 * PIPE_BLOCK],
            at: 0,
            step: 0,
            fail: None,
        };
        let mut p = Pipelined::spawn(inner);
        let mut buf = vec![0; 10];
        assert_eq!(std::io::Read::read(&mut p, &mut buf).unwrap(), 10);
        drop(p);
    }

    #[test]
    fn block_scans_agree() {
        // every SIMD form gives the bitmap and flags a byte loop gives
        let mut blocks: Vec<Vec<u8>> = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in [0usize, 1, 31, 63, 64, 65, 127, 128, 200, 1000, 4099] {
            for pick in [
                b"ab\ncd\n".as_slice(),
                b"x\ry\n",
                b"\x1b[0m\n",
                "\u{e9}\n".as_bytes(),
                // both, and bytes of the same low nibbles that are neither (0x1d, 0x0b, 0x8d,
                // 0x9b: the table look-up must not take them for `\r` or ESC)
                b"\r\x1b\n",
                b"\x1d\x0b\n",
                "\u{8d}\u{35b}\n".as_bytes(),
            ] {
                let mut b = Vec::with_capacity(n);
                while b.len() < n {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x.is_multiple_of(9) {
                        b.extend_from_slice(pick);
                    } else {
                        b.push(b'a' + (x % 26) as u8);
                    }
                }
                b.truncate(n);
                blocks.push(b);
            }
        }
        for b in &blocks {
            let mut want = vec![0u64; b.len().div_ceil(64)];
            for (i, &c) in b.iter().enumerate() {
                want[i / 64] |= u64::from(c == b'\n') << (i % 64);
            }
            let scan = BlockScan {
                ascii: b.is_ascii(),
                cr: b.contains(&b'\r'),
                esc: b.contains(&0x1b),
            };
            // a bitmap left by a longer block: cut and overwritten
            let mut out = vec![u64::MAX; 100];
            assert_eq!(newline_bits(b, &mut out), scan);
            assert_eq!(out, want);
            // stale words from a longer block are overwritten
            let mut base = vec![u64::MAX; want.len()];
            assert_eq!(newline_bits_base(b, &mut base, b.len() / 64), scan);
            assert_eq!(base, want);
        }
    }

    use super::*;

    /// The ASCII head's word-wise count equals the byte-wise one, whatever control bytes,
    /// DEL and NUL bytes fall where (word boundaries, the tail).
    #[test]
    fn head_stats_ascii_fast_path_counts_every_byte() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let specials = [0u8, 1, 7, 9, 10, 12, 13, 0x1b, 0x1f, 0x20, 0x7e, 0x7f];
        for n in [0usize, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200, 1000] {
            for density in [0u64, 3, 17, 1000] {
                let mut b = Vec::with_capacity(n);
                for _ in 0..n {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let c = if density > 0 && x.is_multiple_of(density) {
                        specials[(x >> 8) as usize % specials.len()]
                    } else {
                        b' ' + (x >> 16) as u8 % 95
                    };
                    b.push(c);
                }
                assert!(b.is_ascii());
                assert_eq!(HeadStats::of(&b), HeadStats::of_any(&b), "{b:?}");
            }
        }
    }

    /// `len` bytes of `x` without a newline, then `\n` and one decode line, handed out in
    /// pieces of at most 64 KiB (a pipe); nothing of it is ever held whole.
    struct Endless {
        left: usize,
        tail: &'static [u8],
    }
    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(64 << 10);
            if self.left > 0 {
                let k = n.min(self.left);
                buf[..k].fill(b'x');
                self.left -= k;
                return Ok(k);
            }
            let k = n.min(self.tail.len());
            buf[..k].copy_from_slice(&self.tail[..k]);
            self.tail = &self.tail[k..];
            Ok(k)
        }
    }

    /// Issue 13 item 1: a 256 MiB line from a pipe leaves the reader's buffer at 1 MiB at
    /// most, and the line after it is read.
    #[test]
    fn the_buffer_stays_bounded_on_an_endless_line() {
        let tail = b"\n[2025-06-01 12:00:00 TP0] Decode batch, #running-req: 7, #token: 700, token usage: 0.50, gen throughput (token/s): 99.50, #queue-req: 3\n";
        let mut r = LogReader::from_reader(
            "pipe",
            Endless {
                left: 256 << 20,
                tail,
            },
        );
        let mut seen = Vec::new();
        let stats = r.for_each(|rec| seen.push(rec.event.name())).unwrap();
        assert_eq!(seen, ["malformed", "batch"]);
        assert_eq!(stats.bytes, (256 << 20) + tail.len() as u64);
        assert!(r.buf.len() <= MAX_LINE, "{}", r.buf.len());
    }
}
