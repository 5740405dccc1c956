//! Reading one log for `diagnose`. Unlike a bare [`LogReader::open`], a gzip file that ends
//! early (a copy cut short, a log still being compressed) or is corrupt mid-way keeps every
//! whole line decoded before the damage: they are diagnosed, and the damage is reported as a
//! warning naming the file, the lines read and the compressed byte offset. A log with no
//! SGLang event whose start is not text (NUL bytes, control bytes) gets a warning too.

use std::cell::RefCell;
use std::io::{self, Read};
use std::path::Path;
use std::rc::Rc;

use sglang_log::{CountingBufRead, LogInput, LogReader, ParseStats, ReadError, Record};

/// What reading one log produced.
#[derive(Debug, Default)]
pub struct LogRead {
    /// The parse counts of the lines read (all of them, or those before a gzip error).
    pub stats: ParseStats,
    /// Problems that did not stop the read, each naming the file (for stderr and the report).
    pub warnings: Vec<String>,
}

/// Bytes decoded per refill of [`WholeLines`] (bytes).
const CHUNK: usize = 256 * 1024;

/// Why a gzip stream stopped early.
struct GzFailure {
    error: io::Error,
    /// Decoded bytes of an unterminated last line that were dropped (bytes).
    dropped_bytes: usize,
}

/// Passes on decoded bytes up to the last `\n` seen, so that when the decoder fails the half
/// line before the damage is dropped instead of parsed (a cut `gen throughput (token/s): 12`
/// would read as a wrong number). On a decoder error it records the error and reports end of
/// input; on a clean end it passes on everything.
struct WholeLines<R> {
    inner: R,
    /// Decoded bytes not yet passed on.
    buf: Vec<u8>,
    /// `buf[..ready]` may be passed on.
    ready: usize,
    /// `buf[..pos]` was passed on.
    pos: usize,
    done: bool,
    failure: Rc<RefCell<Option<GzFailure>>>,
}

impl<R: Read> Read for WholeLines<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.pos < self.ready {
                let n = (self.ready - self.pos).min(out.len());
                out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            if self.done {
                return Ok(0);
            }
            // All that was ready is passed on; keep the unterminated rest.
            self.buf.drain(..self.pos);
            self.pos = 0;
            self.ready = 0;
            let old = self.buf.len();
            self.buf.resize(old + CHUNK, 0);
            match self.inner.read(&mut self.buf[old..]) {
                Ok(0) => {
                    self.buf.truncate(old);
                    self.ready = old;
                    self.done = true;
                }
                Ok(n) => {
                    self.buf.truncate(old + n);
                    // The rest before `old` holds no `\n`, so look in the new bytes only,
                    // from their end (a line is short: this stops within a few hundred bytes).
                    self.ready = self.buf[old..]
                        .iter()
                        .rposition(|&b| b == b'\n')
                        .map_or(0, |i| old + i + 1);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.buf.truncate(old),
                Err(error) => {
                    *self.failure.borrow_mut() = Some(GzFailure {
                        error,
                        dropped_bytes: old,
                    });
                    self.buf.clear();
                    self.done = true;
                }
            }
        }
    }
}

/// How much of a log's start [`HeadTap`] keeps for [`not_text_reason`] (bytes).
pub const HEAD_BYTES: usize = 64 * 1024;

/// Keeps a copy of the first [`HEAD_BYTES`] bytes that pass through (after decompression), so
/// that a log without a single SGLang event can be checked for being binary without reading
/// it again (stdin cannot be). Past the head it only forwards.
struct HeadTap<R> {
    inner: R,
    head: Rc<RefCell<Vec<u8>>>,
}

impl<R: Read> Read for HeadTap<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        let mut head = self.head.borrow_mut();
        if head.len() < HEAD_BYTES {
            let take = (HEAD_BYTES - head.len()).min(n);
            head.extend_from_slice(&out[..take]);
        }
        Ok(n)
    }
}

/// Why `head` (the first bytes of a log) does not look like text, or `None` when it does.
///
/// Binary: any NUL byte, or more than 10% of the bytes being control bytes (other than tab,
/// line feed, carriage return, form feed and ESC of ANSI colours) or invalid UTF-8. A log
/// written by Python holds neither.
pub fn not_text_reason(head: &[u8]) -> Option<String> {
    let within = if head.len() >= HEAD_BYTES {
        format!("the first {} KiB", HEAD_BYTES / 1024)
    } else {
        format!("its {} bytes", head.len())
    };
    let nul = head.iter().filter(|&&b| b == 0).count();
    if nul > 0 {
        return Some(format!("{nul} NUL bytes in {within}"));
    }
    let mut odd = 0usize;
    for chunk in head.utf8_chunks() {
        odd += chunk.invalid().len();
        odd += chunk
            .valid()
            .bytes()
            .filter(|&b| {
                (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) || b == 0x7f
            })
            .count();
    }
    (odd * 10 > head.len()).then(|| format!("{odd} control or invalid UTF-8 bytes in {within}"))
}

/// Read the log at `path` (`-` is stdin; gzip is detected by its magic bytes `1f 8b` and may
/// hold several members) and call `push` for every record, in order.
///
/// A gzip stream that is truncated or corrupt does not fail the read: the whole lines before
/// the damage are delivered and a warning says where it stopped.
///
/// # Errors
/// [`ReadError::Open`] when the file cannot be opened or its first bytes cannot be read,
/// [`ReadError::NotAFile`] for a directory, [`ReadError::Read`] when reading a plain file or
/// stdin fails mid-way.
pub fn read_log(path: &Path, mut push: impl FnMut(&Record<'_>)) -> Result<LogRead, ReadError> {
    let name = path.display().to_string();
    let LogInput {
        reader: br,
        gzip: is_gz,
        len_bytes: compressed_len,
    } = LogInput::open(path)?;
    let mut out = LogRead::default();
    let head = Rc::new(RefCell::new(Vec::new()));
    if !is_gz {
        let tap = HeadTap {
            inner: br,
            head: Rc::clone(&head),
        };
        out.stats = LogReader::from_reader(name.clone(), tap).for_each(&mut push)?;
        check_text(&mut out, &name, &head.borrow());
        return Ok(out);
    }
    let (counting, count) = CountingBufRead::new(br);
    let failure = Rc::new(RefCell::new(None));
    let decoder = flate2::bufread::MultiGzDecoder::new(counting);
    let lines = WholeLines {
        inner: decoder,
        buf: Vec::new(),
        ready: 0,
        pos: 0,
        done: false,
        failure: Rc::clone(&failure),
    };
    let tap = HeadTap {
        inner: lines,
        head: Rc::clone(&head),
    };
    out.stats = LogReader::from_reader(name.clone(), tap).for_each(&mut push)?;
    check_text(&mut out, &name, &head.borrow());
    if let Some(f) = failure.borrow_mut().take() {
        let of = compressed_len
            .map(|n| format!(" of {n}"))
            .unwrap_or_default();
        let cut = if f.dropped_bytes > 0 {
            format!(
                "; the cut last line ({} bytes) was left out",
                f.dropped_bytes
            )
        } else {
            String::new()
        };
        out.warnings.push(format!(
            "{name}: the gzip stream is truncated or corrupt after line {} (near compressed byte {}{of}): {}; \
             only the {} lines before it were diagnosed{cut}",
            out.stats.lines,
            count.load(std::sync::atomic::Ordering::Relaxed),
            f.error,
            out.stats.lines
        ));
    }
    Ok(out)
}

/// A log with lines but no SGLang event may be no log at all (a binary, a model file): say so
/// instead of reporting "N other lines". A log with SGLang lines is only checked for NUL bytes
/// in its kept head (a binary that embeds log text).
fn check_text(out: &mut LogRead, name: &str, head: &[u8]) {
    if out.stats.lines == 0 {
        return;
    }
    if out.stats.events == 0 {
        if let Some(why) = not_text_reason(head) {
            out.warnings
                .push(format!("{name} does not look like a text log ({why})"));
        }
        return;
    }
    // SGLang lines inside binary data (a program that embeds a log, a core dump): read, but said.
    let nul = head.iter().filter(|&&b| b == 0).count();
    if nul > 0 {
        out.warnings.push(format!(
            "{name} holds binary data ({nul} NUL bytes in its first {} KiB); its {} SGLang lines were read anyway",
            head.len().div_ceil(1024),
            out.stats.events
        ));
    }
}
