//! One large log parsed on several cores: the file is split at line boundaries, each chunk is
//! read and parsed on its own thread (its own file handle, buffer and [`LogReader`] caches, so
//! memory stays bounded: one 1 MiB-at-most buffer per thread, nothing held whole), and the
//! results come back in file order for the caller to merge. In [`parse_ranges_in_order`] a
//! thread keeps one reader for all its chunks (buffer, newline bitmap and line cache reused;
//! only the file's first chunk computes [`crate::HeadStats`]): a new reader per 1 MiB chunk
//! cost page faults and kernel page clearing of ~11% of each thread's time.
//!
//! Line numbers are exact: a first pass counts each chunk's newlines (in parallel too), so the
//! records of chunk `k` carry the line numbers they would have in a sequential read.
//!
//! The per-chunk state `S` is the caller's (for the diagnosis: an evidence builder per chunk);
//! merging the states in order is the caller's too, which is what makes the split exact: a
//! builder that can append a later chunk's state to an earlier one's gives the sequential
//! result.

use crate::reader::{LogReader, ParseStats, ReadError};
use crate::{MAX_LINE, Record};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::{Condvar, Mutex};

/// Smallest chunk worth a thread of its own (bytes, 4 MiB): smaller files are read by one.
pub const MIN_CHUNK: u64 = 4 << 20;

/// Chunks that [`parse_ranges_in_order`] lets its threads hold beyond one each (parsed or
/// being parsed, not yet merged). The calling thread both merges and parses: while it parses a
/// chunk of its own, the merge waits for that chunk, and the other threads need room to run
/// ahead meanwhile. With one spare chunk they waited for the merge: `throughput-doctor
/// diagnose` of the 512 MiB bench log on 2 cores took 602 ms (mean of 12 runs, `hyperfine`)
/// against 560 ms with 3 and 551 ms with 4, at the same peak memory (45-56 MB: the chunks'
/// fact lists are reused, and the window is seldom full).
pub const SPARE_CHUNKS: usize = 4;

/// What one chunk of a file gave.
#[derive(Debug)]
pub struct ChunkResult<S> {
    /// The chunk's bytes in the file (start inclusive, end exclusive; bytes).
    pub bytes: Range<u64>,
    /// Lines of the file before the chunk (its first record has line number `lines_before + 1`).
    pub lines_before: u64,
    /// The caller's state after every record of the chunk.
    pub state: S,
    /// The chunk's counts (line numbers in them are the file's).
    pub stats: ParseStats,
}

/// Splits the plain file `path` into at most `parts` byte ranges that each start at the start
/// of a line and end after a `\n` (the last one at the end of the file). Chunks smaller than
/// [`MIN_CHUNK`] are not made; a file that is not a plain regular file (gzip, a FIFO) is one
/// range. The search for the cuts reads each byte of the file at most once (plus one 4 KiB
/// read per cut): a tail without a newline ends the search, and is the last range.
///
/// Errors: [`ReadError::Open`] when the file cannot be opened or read.
pub fn split_at_lines(path: &Path, parts: usize) -> Result<Vec<Range<u64>>, ReadError> {
    split_with_min(path, parts, MIN_CHUNK)
}

/// [`split_at_lines`] into ranges of about `chunk` bytes each (at least 64 KiB; the last one
/// may be shorter), e.g. many small chunks for [`parse_ranges_in_order`], whose memory grows
/// with the chunk size.
///
/// # Errors
/// As [`split_at_lines`].
pub fn split_every(path: &Path, chunk: u64) -> Result<Vec<Range<u64>>, ReadError> {
    let chunk = chunk.max(64 << 10);
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    let parts = usize::try_from(len.div_ceil(chunk)).unwrap_or(usize::MAX);
    split_with_min(path, parts, chunk)
}

fn split_with_min(path: &Path, parts: usize, min_chunk: u64) -> Result<Vec<Range<u64>>, ReadError> {
    let open_err = |source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    };
    let mut f = File::open(path).map_err(open_err)?;
    let meta = f.metadata().map_err(open_err)?;
    let len = meta.len();
    let mut magic = [0u8; 2];
    let gzip = meta.is_file() && f.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
    let parts = parts.max(1).min((len / min_chunk.max(1)).max(1) as usize);
    if !meta.is_file() || gzip || parts == 1 {
        return Ok(std::iter::once(0..len).collect());
    }
    let mut cuts = vec![0u64];
    // a cut needs the rest of one line: 4 KiB holds it for nearly every log (a longer line
    // is read on in further pieces). 64 KiB per cut was 6% of a 1 MiB chunk read twice.
    let mut buf = vec![0u8; CUT_READ];
    for k in 1..parts as u64 {
        let target = (len * k / parts as u64).max(*cuts.last().unwrap_or(&0));
        let cut = next_line_start(&mut f, target, len, &mut buf).map_err(open_err)?;
        // no newline from `target` to the end (a crash-zeroed or sparse tail): no later cut
        // can find one either, and searching again from each later target read the tail
        // once per cut (quadratic: 111 s for 1 GiB of NULs)
        if cut >= len {
            break;
        }
        if cut > *cuts.last().unwrap_or(&0) {
            cuts.push(cut);
        }
    }
    cuts.push(len);
    Ok(cuts.windows(2).map(|w| w[0]..w[1]).collect())
}

/// Bytes read at a time to find where the line at a cut ends.
const CUT_READ: usize = 4 << 10;

/// The offset just after the first `\n` at or after `from` (or `len`).
fn next_line_start(f: &mut File, from: u64, len: u64, buf: &mut [u8]) -> io::Result<u64> {
    f.seek(SeekFrom::Start(from))?;
    let mut at = from;
    while at < len {
        let n = f.read(buf)?;
        if n == 0 {
            break;
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok(at + i as u64 + 1);
        }
        at += n as u64;
    }
    Ok(len)
}

/// Newlines in `range` of the file (bytes read with a 1 MiB buffer).
fn count_lines(path: &Path, range: &Range<u64>) -> io::Result<u64> {
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(range.start))?;
    let mut r = f.take(range.end - range.start);
    let mut buf = vec![0u8; MAX_LINE];
    let mut n = 0u64;
    loop {
        let k = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        n += memchr::memchr_iter(b'\n', &buf[..k]).count() as u64;
    }
    Ok(n)
}

/// Parses the plain log file `path` on up to `threads` threads: [`split_at_lines`], then for
/// each chunk a [`LogReader`] on its own thread calls `each(&mut state, record)` for every
/// record of the chunk in order, `state` starting as `init()`. Returns the chunks' results in
/// file order; a gzip file, a FIFO or a small file is one chunk (read as [`LogReader::open`]
/// would). A line that ends in a chunk's last byte without a `\n` (the file's last line) is
/// delivered like the sequential reader does.
///
/// Errors: [`ReadError::Open`] when the file cannot be opened; the first chunk's error (in file
/// order) when reading fails (the other chunks' results are then dropped).
pub fn parse_file_parallel<S, I, F>(
    path: &Path,
    threads: usize,
    init: I,
    each: F,
) -> Result<Vec<ChunkResult<S>>, ReadError>
where
    S: Send,
    I: Fn() -> S + Sync,
    F: Fn(&mut S, &Record<'_>) + Sync,
{
    let ranges = split_at_lines(path, threads)?;
    if ranges.len() == 1 {
        let mut state = init();
        let stats = LogReader::open(path)?.for_each(|r| each(&mut state, r))?;
        return Ok(vec![ChunkResult {
            bytes: ranges[0].clone(),
            lines_before: 0,
            state,
            stats,
        }]);
    }
    let read_err = |line_no, source| ReadError::Read {
        path: path.to_path_buf(),
        line_no,
        source,
        delivered: Box::default(),
    };
    // pass 1: newlines per chunk, for exact line numbers
    let counts: Vec<io::Result<u64>> = std::thread::scope(|sc| {
        let hs: Vec<_> = ranges
            .iter()
            .map(|r| sc.spawn(move || count_lines(path, r)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("thread panicked")))
            })
            .collect()
    });
    let mut before = Vec::with_capacity(counts.len());
    let mut total = 0u64;
    for c in counts {
        before.push(total);
        total += c.map_err(|e| read_err(total, e))?;
    }
    // pass 2: parse
    let (init, each) = (&init, &each);
    let name: PathBuf = path.to_path_buf();
    let results: Vec<Result<ChunkResult<S>, ReadError>> = std::thread::scope(|sc| {
        let hs: Vec<_> = ranges
            .iter()
            .zip(&before)
            .map(|(r, &lines_before)| {
                let name = &name;
                sc.spawn(move || -> Result<ChunkResult<S>, ReadError> {
                    let mut f = File::open(name).map_err(|source| ReadError::Open {
                        path: name.clone(),
                        source,
                    })?;
                    f.seek(SeekFrom::Start(r.start))
                        .map_err(|e| read_err(lines_before, e))?;
                    let mut state = init();
                    let mut reader =
                        LogReader::from_reader(name.display().to_string(), f.take(r.end - r.start))
                            .starting_after(lines_before);
                    let stats = reader.for_each(|rec| each(&mut state, rec))?;
                    Ok(ChunkResult {
                        bytes: r.clone(),
                        lines_before,
                        state,
                        stats,
                    })
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(read_err(0, io::Error::other("thread panicked"))))
            })
            .collect()
    });
    results.into_iter().collect()
}

/// The counts of all chunks, merged in file order (as one sequential read would give them).
pub fn merged_stats<S>(chunks: &[ChunkResult<S>]) -> ParseStats {
    let mut all = ParseStats::default();
    for c in chunks {
        all.merge(&c.stats);
    }
    all.held_back_bytes = 0;
    all
}

/// Parses the chunks `ranges` of the plain file `path` (from [`split_at_lines`]) on `threads`
/// threads, the calling thread one of them, and hands each chunk's state to `merge` on the
/// calling thread, in file order: memory holds at most `threads + `[`SPARE_CHUNKS`] chunk
/// states (plus one reader buffer per thread) however large the file; a thread waits when it
/// is that far ahead of the merge.
///
/// The calling thread merges whenever the next chunk in file order is ready and parses a
/// chunk otherwise, so `threads` threads are busy in all: a separate merging thread would be
/// one runnable thread more than there are cores, and the parsers would wait whenever it is
/// off its core.
///
/// There is no counting pass: the records of a chunk carry line numbers counted from the
/// chunk's start (its first line is 1), and `merge` gets the number of lines of the file
/// before the chunk to add to them (known by then, as the chunks are merged in order). `each`
/// also gets each record's line bytes ([`LogReader::for_each_raw`]). Returns the file's
/// counts, with the file's line numbers in their kept lines and the head of its first chunk.
///
/// # Errors
/// [`ReadError::Open`] when the file cannot be opened, [`ReadError::Read`] when a chunk cannot
/// be read (its line number is the file's); the chunks before it are merged.
pub fn parse_ranges_in_order<S, I, F, M>(
    path: &Path,
    ranges: &[Range<u64>],
    threads: usize,
    init: I,
    each: F,
    mut merge: M,
) -> Result<ParseStats, ReadError>
where
    S: Send,
    I: Fn() -> S + Sync,
    F: Fn(&mut S, &Record<'_>, &[u8]) + Sync,
    M: FnMut(S, u64),
{
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc;
    let threads = threads.max(1);
    let (init, each) = (&init, &each);
    let window = Window::for_threads(threads);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, ChunkOutcome<S>)>();
    std::thread::scope(|sc| {
        for _ in 1..threads.min(ranges.len()) {
            let tx = tx.clone();
            let (window, stop) = (&window, &stop);
            sc.spawn(move || {
                // one reader per thread, its buffers reused from chunk to chunk
                let mut reader = None;
                while let Some(k) = window.take(ranges.len(), stop) {
                    let res = parse_chunk(path, ranges, k, &mut reader, init, each);
                    if tx.send((k, res)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let parse_here = |k: usize, reader: &mut Option<LogReader<io::Take<File>>>| {
            parse_chunk(path, ranges, k, reader, init, each)
        };
        let out = merge_in_order(path, ranges.len(), &rx, &mut merge, &window, parse_here);
        // on an error: wake and stop the threads (the results still coming are dropped)
        stop.store(true, Ordering::Relaxed);
        window.progress.notify_all();
        out
    })
}

/// Parses the logs `paths` (each whole; plain or gzip, as [`LogReader::open`] reads them) on
/// `threads` threads, the calling thread one of them, and hands each file's state and counts,
/// or the error that ended its read, to `merge` on the calling thread, in the order of
/// `paths`, with the file's index. For many small files (a job directory's rank logs) one
/// file per thread is the parallelism there is; memory holds at most `threads +`
/// [`SPARE_CHUNKS`] files' states, so the files should be small (a large plain file is split
/// by [`parse_ranges_in_order`] instead).
///
/// `merge` returning an error stops the reading: the files not yet merged are dropped (the
/// threads stop after the file each is reading) and the error is returned.
///
/// # Errors
/// The first error `merge` returns.
pub fn parse_files_in_order<S, E, I, F, M>(
    paths: &[PathBuf],
    threads: usize,
    init: I,
    each: F,
    mut merge: M,
) -> Result<(), E>
where
    S: Send,
    I: Fn() -> S + Sync,
    F: Fn(&mut S, &Record<'_>, &[u8]) + Sync,
    M: FnMut(usize, Result<(S, ParseStats), ReadError>) -> Result<(), E>,
{
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc;
    let (init, each) = (&init, &each);
    let read = |k: usize| -> Result<(S, ParseStats), ReadError> {
        let Some(path) = paths.get(k) else {
            return Err(panicked(Path::new("-"), 0));
        };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut state = init();
            let stats =
                LogReader::open(path)?.for_each_raw(|rec, raw| each(&mut state, rec, raw))?;
            Ok((state, stats))
        }))
        .unwrap_or_else(|_| Err(panicked(path, 0)))
    };
    let threads = threads.max(1).min(paths.len());
    if threads <= 1 {
        for k in 0..paths.len() {
            merge(k, read(k))?;
        }
        return Ok(());
    }
    let window = Window::for_threads(threads);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<(S, ParseStats), ReadError>)>();
    std::thread::scope(|sc| {
        for _ in 1..threads {
            let tx = tx.clone();
            let (window, stop, read) = (&window, &stop, &read);
            sc.spawn(move || {
                while let Some(k) = window.take(paths.len(), stop) {
                    if tx.send((k, read(k))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // the calling thread: merge in order, read a file itself while the next is not back
        let mut out = Ok(());
        let mut pending = std::collections::BTreeMap::new();
        let mut done = 0usize;
        while done < paths.len() {
            while let Ok((k, res)) = rx.try_recv() {
                pending.insert(k, res);
            }
            match pending.remove(&done) {
                Some(res) => {
                    if let Err(e) = merge(done, res) {
                        out = Err(e);
                        break;
                    }
                    done += 1;
                    window.merged_up_to(done);
                }
                None => match window.claim(done, paths.len()) {
                    Some(k) => {
                        pending.insert(k, read(k));
                    }
                    None => match rx.recv() {
                        Ok((k, res)) => {
                            pending.insert(k, res);
                        }
                        // every helper is gone with the next file unread: read it here
                        Err(_) => {
                            pending.insert(done, read(done));
                        }
                    },
                },
            }
        }
        stop.store(true, Ordering::Relaxed);
        window.progress.notify_all();
        out
    })
}

/// What parsing one chunk gave: its state and counts, or why it could not be read.
type ChunkOutcome<S> = Result<(S, ParseStats), ReadError>;

/// How far the threads of [`parse_ranges_in_order`] may run ahead of the merge.
struct Window {
    /// Chunks parsed or being parsed but not merged, at most.
    ahead: usize,
    /// The next chunk to take.
    next: AtomicUsize,
    /// How many chunks were merged (a thread takes chunk `k` only when `k < merged + ahead`).
    merged: Mutex<usize>,
    /// Signalled after each merge.
    progress: Condvar,
}

impl Window {
    /// The window of `threads` threads: one chunk (or file) each and [`SPARE_CHUNKS`].
    fn for_threads(threads: usize) -> Self {
        Window {
            ahead: threads + SPARE_CHUNKS,
            next: AtomicUsize::new(0),
            merged: Mutex::new(0),
            progress: Condvar::new(),
        }
    }

    /// Takes the next of `jobs` chunks (or files) for a helper thread, waiting until it is
    /// inside the window; `None` when every one is taken or `stop` is set.
    fn take(&self, jobs: usize, stop: &std::sync::atomic::AtomicBool) -> Option<usize> {
        use std::sync::atomic::Ordering;
        let k = self.next.fetch_add(1, Ordering::Relaxed);
        if k >= jobs {
            return None;
        }
        let mut m = self.merged.lock().unwrap_or_else(|e| e.into_inner());
        while k >= *m + self.ahead && !stop.load(Ordering::Relaxed) {
            m = self.progress.wait(m).unwrap_or_else(|e| e.into_inner());
        }
        drop(m);
        (!stop.load(Ordering::Relaxed)).then_some(k)
    }

    /// Records that `done` chunks (or files) are merged and wakes the helpers waiting for it.
    fn merged_up_to(&self, done: usize) {
        *self.merged.lock().unwrap_or_else(|e| e.into_inner()) = done;
        self.progress.notify_all();
    }

    /// Takes the next chunk for the merging thread, if there is one and it is inside the
    /// window (`done` chunks merged); the merging thread never waits for the window.
    fn claim(&self, done: usize, chunks: usize) -> Option<usize> {
        use std::sync::atomic::Ordering;
        let mut k = self.next.load(Ordering::Relaxed);
        loop {
            if k >= chunks || k >= done + self.ahead {
                return None;
            }
            match self
                .next
                .compare_exchange_weak(k, k + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(k),
                Err(now) => k = now,
            }
        }
    }
}

/// Chunk `k` of `ranges`, parsed with the thread's reader; a panic (there should be none) is
/// this chunk's error, not a hang.
fn parse_chunk<S, I, F>(
    path: &Path,
    ranges: &[Range<u64>],
    k: usize,
    reader: &mut Option<LogReader<io::Take<File>>>,
    init: &I,
    each: &F,
) -> ChunkOutcome<S>
where
    I: Fn() -> S,
    F: Fn(&mut S, &Record<'_>, &[u8]),
{
    let Some(r) = ranges.get(k) else {
        return Err(panicked(path, 0));
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parse_range(path, r, k == 0, reader, init, each)
    }))
    .unwrap_or_else(|_| Err(panicked(path, 0)))
}

/// The error of a chunk whose parser thread panicked.
fn panicked(path: &Path, line_no: u64) -> ReadError {
    ReadError::Read {
        path: path.to_path_buf(),
        line_no,
        source: io::Error::other("a parser thread panicked"),
        delivered: Box::default(),
    }
}

/// The calling thread's side of [`parse_ranges_in_order`]: merges the chunks in order as
/// they come, tells the other threads how far the merge got, and parses a chunk itself
/// (`parse_here`) whenever the next one to merge is not ready.
fn merge_in_order<S, M, P>(
    path: &Path,
    chunks: usize,
    rx: &std::sync::mpsc::Receiver<(usize, ChunkOutcome<S>)>,
    merge: &mut M,
    window: &Window,
    parse_here: P,
) -> Result<ParseStats, ReadError>
where
    M: FnMut(S, u64),
    P: Fn(usize, &mut Option<LogReader<io::Take<File>>>) -> ChunkOutcome<S>,
{
    let mut all = ParseStats::default();
    let mut lines_before = 0u64;
    let mut pending = std::collections::BTreeMap::new();
    let mut done = 0usize;
    let mut reader = None;
    while done < chunks {
        // what the other threads finished, without waiting
        while let Ok((k, res)) = rx.try_recv() {
            pending.insert(k, res);
        }
        if !pending.contains_key(&done) {
            if let Some(k) = window.claim(done, chunks) {
                pending.insert(k, parse_here(k, &mut reader));
            } else {
                // every chunk inside the window is taken: wait for the next to come back
                let Ok((k, res)) = rx.recv() else {
                    return Err(panicked(path, lines_before));
                };
                pending.insert(k, res);
            }
            continue;
        }
        while let Some(res) = pending.remove(&done) {
            let (state, mut stats) = match res {
                Ok(x) => x,
                Err(ReadError::Read {
                    path,
                    line_no,
                    source,
                    delivered,
                }) => {
                    return Err(ReadError::Read {
                        path,
                        line_no: lines_before + line_no,
                        source,
                        delivered,
                    });
                }
                Err(e) => return Err(e),
            };
            stats.shift_lines(lines_before);
            if done == 0 {
                all.head = stats.head;
            }
            merge(state, lines_before);
            lines_before += stats.lines;
            all.merge(&stats);
            done += 1;
            window.merged_up_to(done);
        }
    }
    all.held_back_bytes = 0;
    Ok(all)
}

/// One chunk of [`parse_ranges_in_order`]: its state and counts (chunk line numbers).
fn parse_range<S, I, F>(
    path: &Path,
    r: &Range<u64>,
    first: bool,
    reader: &mut Option<LogReader<io::Take<File>>>,
    init: &I,
    each: &F,
) -> Result<(S, ParseStats), ReadError>
where
    I: Fn() -> S,
    F: Fn(&mut S, &Record<'_>, &[u8]),
{
    let mut f = File::open(path).map_err(|source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    f.seek(SeekFrom::Start(r.start))
        .map_err(|source| ReadError::Read {
            path: path.to_path_buf(),
            line_no: 0,
            source,
            delivered: Box::default(),
        })?;
    let input = f.take(r.end - r.start);
    let reader = match reader {
        Some(rd) => {
            rd.restart(input, first);
            rd
        }
        None => reader
            .insert(LogReader::from_reader(path.display().to_string(), input).with_head(first)),
    };
    let mut state = init();
    let stats = reader.for_each_raw(|rec, raw| each(&mut state, rec, raw))?;
    Ok((state, stats))
}
