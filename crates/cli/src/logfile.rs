//! Reading one log for `diagnose`: what the reader reports as damage becomes a warning instead
//! of an error. A gzip file that ends early (a copy cut short, a log still being compressed) or
//! is corrupt mid-way keeps every whole line decoded before the damage (the reader delivers
//! them and never the cut line): they are diagnosed, and a warning names the file, the lines
//! read and the compressed byte offset. A file whose start is not text (NUL bytes, control
//! bytes; [`sglang_log::HeadStats`]) gets a warning too. A directory given as a log is the
//! list of its log files ([`expand_log_dirs`]).

use std::path::{Path, PathBuf};

use diagnosis::evidence::merge::ChunkFacts;
use diagnosis::evidence::{EvidenceBuilder, SourceId};
use sglang_log::{
    ForeignFormat, FormatSniffer, LogReader, NotSglangLog, ParseStats, ReadError, Record,
};

/// The log inputs `paths` stand for: a file (or `-`) is itself; a directory (a job's log
/// directory: every rank's and node's log, `.gz`, rotated parts) is every log file under it,
/// subdirectories included (8 levels at most), in a stable order: by directory, then by log
/// name, a name's rotated parts oldest first (`server.log.3`, `.2`, `.1`, then `server.log`; a
/// `.gz` beside its plain name). A log file is a file whose name holds `.log` (`server.log`,
/// `rank0.log.1`, `node1.log.gz`, `sglang.log-20260105`) or ends in `.out`, `.err` or `.txt`
/// (optionally `.gz`); hidden files are skipped. Paths named twice are kept (the evidence
/// builder counts a repeated file once).
///
/// A directory is walked without following links: a link to a directory is not entered (a
/// link to `.` made the walk read each file once per path through the links, 9,841 times
/// for three of them), and a link to a file is read only when the file is inside the
/// directory; a link out of it is skipped (name its file to read it). A file reached by
/// two names (a link to it, a hard link) is read once, under the first name in the order
/// above. An entry with a log's name that is no regular file (a FIFO, a socket, a device, a
/// broken link) is left out: reading a FIFO would wait for a writer, and a broken link end
/// the whole read. Each entry left out adds a line saying so to `skipped`.
///
/// # Errors
/// A directory that cannot be read, or holds no log file (the message names it).
pub fn expand_log_dirs(
    paths: &[PathBuf],
    skipped: &mut Vec<String>,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() != "-" && p.is_dir() {
            let mut found = collect_logs(p, skipped)?;
            if found.is_empty() {
                anyhow::bail!(
                    "{} is a directory without log files (*.log*, *.out, *.err, *.txt, optionally .gz)",
                    p.display()
                );
            }
            found.sort_by_cached_key(|(f, _)| log_order(f));
            // one read per file, under its first name
            let mut first: std::collections::HashMap<FileKey, PathBuf> =
                std::collections::HashMap::new();
            for (f, key) in found {
                match first.get(&key) {
                    Some(earlier) => skipped.push(format!(
                        "skipped {}: the same file as {}, read once",
                        f.display(),
                        earlier.display()
                    )),
                    None => {
                        first.insert(key, f.clone());
                        out.push(f);
                    }
                }
            }
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// What identifies a file whatever its name: (device, inode).
#[cfg(unix)]
type FileKey = (u64, u64);
/// What identifies a file whatever its name: its canonical path.
#[cfg(not(unix))]
type FileKey = PathBuf;

/// The identity of the file `path` leads to (through links), with its metadata.
#[cfg(unix)]
fn file_key(_path: &Path, meta: &std::fs::Metadata) -> FileKey {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// The identity of the file `path` leads to (through links), with its metadata.
#[cfg(not(unix))]
fn file_key(path: &Path, _meta: &std::fs::Metadata) -> FileKey {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Log files under `dir` (8 directory levels deep at most, links not followed out of it),
/// each with the identity of its file.
fn collect_logs(dir: &Path, skipped: &mut Vec<String>) -> anyhow::Result<Vec<(PathBuf, FileKey)>> {
    let cant = |at: &Path, e: &dyn std::fmt::Display| {
        anyhow::anyhow!("cannot read the directory {}: {e}", at.display())
    };
    let root = std::fs::canonicalize(dir).map_err(|e| cant(dir, &e))?;
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .max_depth(9)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walk {
        let entry = entry.map_err(|e| {
            let at = e.path().unwrap_or(dir).to_path_buf();
            cant(&at, &e)
        })?;
        let ft = entry.file_type();
        if entry.depth() == 0 || ft.is_dir() {
            continue;
        }
        let path = entry.path();
        let linked = ft.is_symlink();
        // the file the name leads to (through a link)
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                if is_log_name(&entry.file_name().to_string_lossy()) {
                    skipped.push(format!("skipped {}: {e}", path.display()));
                }
                continue;
            }
        };
        if linked && meta.is_dir() {
            skipped.push(format!(
                "skipped {}: a link to a directory, not followed (name the directory to read it)",
                path.display()
            ));
            continue;
        }
        if !is_log_name(&entry.file_name().to_string_lossy()) {
            continue;
        }
        if !meta.is_file() {
            skipped.push(format!(
                "skipped {}: not a regular file (a FIFO, socket or device)",
                path.display()
            ));
            continue;
        }
        if linked && !std::fs::canonicalize(path).is_ok_and(|t| t.starts_with(&root)) {
            skipped.push(format!(
                "skipped {}: a link out of the directory, not followed (name the file to read it)",
                path.display()
            ));
            continue;
        }
        out.push((path.to_path_buf(), file_key(path, &meta)));
    }
    Ok(out)
}

/// Whether a file name looks like a log (see [`expand_log_dirs`]).
fn is_log_name(name: &str) -> bool {
    let plain = name.strip_suffix(".gz").unwrap_or(name);
    plain.contains(".log") || [".out", ".err", ".txt"].iter().any(|s| plain.ends_with(s))
}

/// Sort key of a log file: its directory, its name without the rotation suffix and `.gz`,
/// then its rotated parts oldest first (a higher number is older; a dated suffix sorts by
/// date; the live file, without a suffix, last), plain before `.gz`.
fn log_order(path: &Path) -> (PathBuf, String, u8, std::cmp::Reverse<u64>, String, bool) {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let gz = name.ends_with(".gz");
    let plain = name.strip_suffix(".gz").unwrap_or(&name).to_string();
    let (base, suffix) = match plain.find(".log") {
        Some(i) => plain.split_at(i + ".log".len()),
        None => (plain.as_str(), ""),
    };
    let suffix = suffix.trim_start_matches(['.', '-', '_']);
    let (rank, number, dated) = match suffix.parse::<u64>() {
        _ if suffix.is_empty() => (2, 0, String::new()),
        Ok(n) if suffix.len() < 8 => (0, n, String::new()),
        _ => (1, 0, suffix.to_string()),
    };
    // `.N` parts (0, by number descending), then dated parts (1, ascending), then the live file
    (
        dir,
        base.to_string(),
        rank,
        std::cmp::Reverse(number),
        dated,
        gz,
    )
}

/// What reading one log produced.
#[derive(Debug, Default)]
pub struct LogRead {
    /// The parse counts of the lines read (all of them, or those before a gzip error).
    pub stats: ParseStats,
    /// Problems that did not stop the read, each naming the file (for stderr and the report).
    pub warnings: Vec<String>,
    /// A client's progress lines among the lines that start in its first
    /// [`PROGRESS_SNIFF_BYTES`], counted as they were read ([`ProgressSniff`]).
    pub progress_lines: u64,
}

/// Bytes of a log's start looked at for a client's progress lines (64 KiB).
pub const PROGRESS_SNIFF_BYTES: u64 = 64 << 10;

/// Counts a client's progress lines (`date-time ... N/M done`, as `--client-log` reads them)
/// among the lines that start in a log's first [`PROGRESS_SNIFF_BYTES`], as the log is read:
/// a log is read once, as a FIFO or stdin can only be (reopening a FIFO whose writer is gone
/// waits forever).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProgressSniff {
    /// Bytes of the lines seen (each line's bytes and its newline).
    seen: u64,
    /// Progress lines among them.
    lines: u64,
}

impl ProgressSniff {
    /// Takes the next line's bytes (without its newline).
    pub fn push(&mut self, raw: &[u8]) {
        if self.seen < PROGRESS_SNIFF_BYTES
            && sglang_log::is_progress_line(&String::from_utf8_lossy(raw))
        {
            self.lines += 1;
        }
        self.seen += raw.len() as u64 + 1;
    }

    /// The progress lines counted.
    pub fn lines(&self) -> u64 {
        self.lines
    }
}

/// Read the log at `path` (`-` is stdin; gzip is detected by its magic bytes and may hold
/// several members) and call `push` for every record, in order.
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
    let mut out = LogRead::default();
    let mut progress = ProgressSniff::default();
    let res = LogReader::open(path)?.for_each_raw(|rec, raw| {
        progress.push(raw);
        push(rec);
    });
    out.progress_lines = progress.lines();
    match res {
        Ok(stats) => out.stats = stats,
        Err(ReadError::Gzip {
            line_no,
            compressed_offset,
            source,
            delivered,
            ..
        }) => {
            out.stats = *delivered;
            let of = std::fs::metadata(path)
                .map(|m| format!(" of {}", m.len()))
                .unwrap_or_default();
            let cut = match out.stats.held_back_bytes {
                0 => String::new(),
                n => format!("; the cut last line ({n} bytes) was left out"),
            };
            out.warnings.push(format!(
                "{name}: the gzip stream is truncated or corrupt after line {line_no} (near compressed byte {compressed_offset}{of}): {source}; \
                 only the {line_no} lines before it were diagnosed{cut}"
            ));
        }
        Err(e) => return Err(e),
    }
    check_text(&mut out, &name);
    Ok(out)
}

/// Chunk of a large plain log parsed on a thread of its own by [`read_log_into`] (bytes,
/// 1 MiB: the facts a chunk leaves for the evidence stay about 2 MB per chunk in flight).
const CHUNK_BYTES: u64 = 1 << 20;

/// Read the log at `path` into the evidence of source `id`: as [`read_log`] with
/// [`EvidenceBuilder::push`], but a plain file of at least two chunks (1 MiB each) is
/// parsed on every core, one chunk per thread, and the chunks' facts are handed to the builder
/// in file order ([`EvidenceBuilder::push_chunk`]), which gives the evidence of a sequential
/// read. Memory stays bounded: one wave of chunks is held at a time.
///
/// # Errors
/// As [`read_log`].
pub fn read_log_into(
    path: &Path,
    b: &mut EvidenceBuilder,
    id: SourceId,
    sniff: &mut FormatSniffer,
) -> Result<LogRead, ReadError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let len = if path.as_os_str() == "-" {
        0
    } else {
        std::fs::metadata(path).map_or(0, |m| if m.is_file() { m.len() } else { 0 })
    };
    if threads > 1 && len >= 2 * CHUNK_BYTES {
        let ranges = sglang_log::parallel::split_every(path, CHUNK_BYTES)?;
        if ranges.len() > 1 {
            // the chunks' fact lists are reused (no allocation and page faults per chunk)
            let pool = std::sync::Mutex::new(Vec::<ChunkFacts>::new());
            // the format sniffer sees records until one is SGLang's (usually the first few);
            // a flag spares the lock after that
            let sniffed = std::sync::atomic::AtomicBool::new(sniff.is_sglang());
            let shared_sniff = std::sync::Mutex::new(std::mem::take(sniff));
            let take = || {
                pool.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .pop()
                    .unwrap_or_else(|| ChunkFacts::for_bytes(CHUNK_BYTES))
            };
            let stats = sglang_log::parallel::parse_ranges_in_order(
                path,
                &ranges,
                threads,
                take,
                |c, rec, raw| {
                    if !sniffed.load(std::sync::atomic::Ordering::Relaxed) {
                        let mut s = shared_sniff.lock().unwrap_or_else(|e| e.into_inner());
                        s.push(rec);
                        if s.is_sglang() {
                            sniffed.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                    c.push(rec, raw)
                },
                |mut c, lines_before| {
                    b.push_chunk(id, &mut c, lines_before);
                    pool.lock().unwrap_or_else(|e| e.into_inner()).push(c);
                },
            )?;
            *sniff = shared_sniff.into_inner().unwrap_or_else(|e| e.into_inner());
            // a regular file of two chunks or more (no FIFO): its head can be read again
            let progress_lines = if stats.events == 0 {
                progress_in_head(path)
            } else {
                0
            };
            let mut out = LogRead {
                stats,
                warnings: Vec::new(),
                progress_lines,
            };
            check_text(&mut out, &path.display().to_string());
            return Ok(out);
        }
    }
    read_log(path, |rec| {
        if !sniff.is_sglang() {
            sniff.push(rec);
        }
        b.push(id, rec);
    })
}

/// A client's progress lines in the first [`PROGRESS_SNIFF_BYTES`] of the regular file
/// `path` (0 when it cannot be read).
fn progress_in_head(path: &Path) -> u64 {
    use std::io::Read as _;
    let mut head = Vec::new();
    if std::fs::File::open(path)
        .and_then(|f| f.take(PROGRESS_SNIFF_BYTES).read_to_end(&mut head))
        .is_err()
    {
        return 0;
    }
    let mut sniff = ProgressSniff::default();
    head.split(|&b| b == b'\n').for_each(|l| sniff.push(l));
    sniff.lines()
}

/// True when the file starts with the gzip magic bytes.
pub(crate) fn is_gzip(path: &Path) -> bool {
    use std::io::Read as _;
    let mut magic = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == [0x1f, 0x8b]
}

/// Whether `path` is a plain file too small to be split into chunks by [`read_log_into`]
/// (under two chunks), which [`read_small_logs`] reads whole beside others. Not stdin, not
/// gzip (a small gzip file may inflate to any size). A file that cannot be opened is read in
/// its turn all the same, and its error is the reader's, as from [`read_log_into`].
pub fn is_small_plain(path: &Path) -> bool {
    path.as_os_str() != "-"
        && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() < 2 * CHUNK_BYTES)
        && !is_gzip(path)
}

/// A small log read whole on a thread of its own ([`read_small_logs`]): its facts for the
/// evidence ([`EvidenceBuilder::push_chunk`] of them gives what [`EvidenceBuilder::push`] of
/// each record gives), what [`read_log`] reports of it, and what it looks like.
#[derive(Debug)]
pub struct SmallLog {
    /// The facts of its records, as one chunk from its first line.
    pub facts: ChunkFacts,
    /// Its counts and warnings.
    pub read: LogRead,
    /// What its records look like (SGLang's or another tool's).
    pub sniff: FormatSniffer,
}

/// What [`read_small_logs`] gathers over one file's records.
type SmallState = (ChunkFacts, FormatSniffer, ProgressSniff);

/// Reads the small plain logs `paths` ([`is_small_plain`]) on `threads` threads, a file per
/// thread, and hands each to `take` in the order of `paths`: a job directory of many small
/// rank logs is read on every core, though no file of it is large enough to be split.
///
/// # Errors
/// The first error `take` returns (it gets each file's read error, and decides).
pub fn read_small_logs<E>(
    paths: &[PathBuf],
    threads: usize,
    mut take: impl FnMut(&Path, Result<SmallLog, ReadError>) -> Result<(), E>,
) -> Result<(), E> {
    sglang_log::parallel::parse_files_in_order(
        paths,
        threads,
        || -> SmallState {
            (
                ChunkFacts::new(),
                FormatSniffer::new(),
                ProgressSniff::default(),
            )
        },
        |(facts, sniff, progress), rec, raw| {
            if !sniff.is_sglang() {
                sniff.push(rec);
            }
            progress.push(raw);
            facts.push(rec, raw);
        },
        |k, res| {
            let path = paths.get(k).map_or(Path::new("-"), PathBuf::as_path);
            let small = res.map(|((facts, sniff, progress), stats)| {
                let mut read = LogRead {
                    stats,
                    warnings: Vec::new(),
                    progress_lines: progress.lines(),
                };
                check_text(&mut read, &path.display().to_string());
                SmallLog { facts, read, sniff }
            });
            take(path, small)
        },
    )
}

/// A log with lines but no SGLang event may be no log at all (a binary, a model file): say so
/// instead of reporting "N other lines". A log with SGLang lines is only checked for NUL bytes
/// in its head (a binary that embeds log text).
fn check_text(out: &mut LogRead, name: &str) {
    let Some(head) = out.stats.head.filter(|_| out.stats.lines > 0) else {
        return;
    };
    if out.stats.events == 0 {
        if let Some(why) = head.not_text_reason() {
            out.warnings
                .push(format!("{name} does not look like a text log ({why})"));
        }
    } else if head.nul_bytes > 0 {
        // SGLang lines inside binary data (a program that embeds a log, a core dump): read, but said.
        out.warnings.push(format!(
            "{name} holds binary data ({} NUL bytes in its first {} KiB); its {} SGLang lines were read anyway",
            head.nul_bytes,
            head.bytes.div_ceil(1024),
            out.stats.events
        ));
    }
}

/// What to give instead of a file that is not an SGLang log: the flag that reads its format,
/// as the tail of the error line (empty when there is none).
pub fn foreign_hint(e: &NotSglangLog) -> &'static str {
    match e.format() {
        Some(ForeignFormat::NvidiaSmi) => {
            " (an nvidia-smi output goes to --gpu-snapshot FILE, beside the server log)"
        }
        Some(ForeignFormat::PrometheusExposition) => {
            " (/metrics is read from a live server with --server URL, or from Prometheus with --prometheus URL; a saved scrape is not read)"
        }
        Some(ForeignFormat::ModelConfig) => {
            " (a model config goes to --model-config FILE, beside the server log)"
        }
        Some(ForeignFormat::AiperfConsole) => {
            " (AIPerf's console summary goes to --client-log FILE, beside the server log)"
        }
        Some(ForeignFormat::ServerInfo) => {
            " (a /server_info response goes to --server-info FILE, beside the server log)"
        }
        Some(ForeignFormat::ClientRecords | ForeignFormat::AiperfRecords) => {
            " (per-request records go to --client-records FILE, beside the server log)"
        }
        Some(ForeignFormat::BenchServingResult) => {
            " (bench_serving's result file goes to --client-records FILE, beside the server log)"
        }
        Some(ForeignFormat::AiperfReport | ForeignFormat::GuidellmConsole) => {
            " (a benchmark client's run summary goes to --client-log FILE, its per-request records to --client-records FILE, beside the server log)"
        }
        Some(ForeignFormat::GuidellmReport) => {
            " (GuideLLM's report goes to --client-records FILE, beside the server log: its requests and each benchmark's summary are read)"
        }
        // another engine's log: the error names it, and no option of this tool takes it
        Some(
            ForeignFormat::Vllm
            | ForeignFormat::LlamaCpp
            | ForeignFormat::Tgi
            | ForeignFormat::TensorRtLlm
            | ForeignFormat::Dynamo
            | ForeignFormat::LmDeploy
            | ForeignFormat::Ollama
            | ForeignFormat::LightLlm
            | ForeignFormat::MlcLlm
            | ForeignFormat::Aphrodite,
        )
        | None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small logs read a file per thread give the evidence (every source's counts, samples,
    /// runs and incidents) and the format verdicts of reading them one after another.
    #[test]
    fn small_logs_on_threads_give_the_evidence_of_one_read_after_another() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/real");
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        paths.sort();
        assert!(paths.len() >= 20 && paths.iter().all(|p| is_small_plain(p)));
        let mut b = EvidenceBuilder::new();
        let mut foreign = Vec::new();
        for p in &paths {
            let name = p.display().to_string();
            let id = b.add_source(name.clone());
            let mut sniff = FormatSniffer::new();
            let read = read_log(p, |rec| {
                if !sniff.is_sglang() {
                    sniff.push(rec);
                }
                b.push(id, rec);
            })
            .unwrap();
            b.finish_source(id, &read.stats);
            foreign.push(sniff.error(&name).map(|e| e.to_string()));
        }
        let want = format!("{:?}", b.build());
        // the real logs' evidence: sources, batch samples, retractions
        assert!(
            want.len() > 100_000 && want.contains("retraction_lines: "),
            "{}",
            want.len()
        );
        for threads in [2, 3] {
            let mut b = EvidenceBuilder::new();
            let mut got_foreign = Vec::new();
            read_small_logs(&paths, threads, |p, read| {
                let name = p.display().to_string();
                let id = b.add_source(name.clone());
                let mut log = read?;
                b.push_chunk(id, &mut log.facts, 0);
                b.finish_source(id, &log.read.stats);
                got_foreign.push(log.sniff.error(&name).map(|e| e.to_string()));
                Ok::<(), ReadError>(())
            })
            .unwrap();
            assert!(format!("{:?}", b.build()) == want, "{threads} threads");
            assert_eq!(got_foreign, foreign);
        }
    }

    /// A job directory: two nodes, rotated and compressed parts, files that are not logs.
    #[test]
    fn a_directory_is_its_logs_in_a_stable_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "node1/server.log",
            "node1/server.log.1",
            "node1/server.log.2.gz",
            "node1/server.log.10",
            "node0/rank0.out",
            "node0/sglang.log-20260105.gz",
            "node0/sglang.log-20260104",
            "node0/sglang.log",
            "node0/client_records.jsonl",
            "node0/.hidden.log",
            "node0/plot.svg",
            "README.md",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"x\n").unwrap();
        }
        let got =
            expand_log_dirs(&[root.to_path_buf(), PathBuf::from("-")], &mut Vec::new()).unwrap();
        let rel: Vec<String> = got
            .iter()
            .map(|p| {
                p.strip_prefix(root)
                    .map(|r| r.display().to_string())
                    .unwrap_or_else(|_| p.display().to_string())
            })
            .collect();
        assert_eq!(
            rel,
            [
                "node0/rank0.out",
                "node0/sglang.log-20260104",
                "node0/sglang.log-20260105.gz",
                "node0/sglang.log",
                "node1/server.log.10",
                "node1/server.log.2.gz",
                "node1/server.log.1",
                "node1/server.log",
                "-",
            ]
        );
        // the same every time
        assert_eq!(
            got,
            expand_log_dirs(&[root.to_path_buf(), PathBuf::from("-")], &mut Vec::new()).unwrap()
        );
    }

    #[test]
    fn a_directory_without_logs_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), b"x").unwrap();
        let e = expand_log_dirs(&[dir.path().to_path_buf()], &mut Vec::new()).unwrap_err();
        assert!(
            e.to_string().contains(&dir.path().display().to_string()),
            "{e}"
        );
        assert!(e.to_string().contains("without log files"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_broken_link_in_a_directory_is_skipped_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("rank0.log"), b"x\n").unwrap();
        std::os::unix::fs::symlink(root.join("gone.log"), root.join("rank1.log")).unwrap();
        let fifo = root.join("rank2.log");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        let mut skipped = Vec::new();
        let got = expand_log_dirs(&[root.to_path_buf()], &mut skipped).unwrap();
        assert_eq!(got, [root.join("rank0.log")]);
        let broken = format!("skipped {}: ", root.join("rank1.log").display());
        assert!(
            skipped.iter().any(|s| s.starts_with(&broken)),
            "{skipped:?}"
        );
        if made.is_ok_and(|s| s.success()) {
            let line = format!(
                "skipped {}: not a regular file (a FIFO, socket or device)",
                fifo.display()
            );
            assert!(skipped.contains(&line), "{skipped:?}");
            assert_eq!(skipped.len(), 2);
        }
    }
}
