//! `diagnose --watch DURATION`: follow the logs as they grow (appends and rotation), poll the
//! server's `/metrics`, and print a rolling verdict every period until Ctrl-C.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use diagnosis::EvidenceBuilder;
use sglang_log::{LogReader, ParseStats};

use crate::{DiagnoseArgs, build_context, render};

/// The shortest span of log a rolling verdict looks at (seconds).
pub const ROLLING_WINDOW_MIN_S: f64 = 300.0;

/// `HH:MM:SS UTC` of now.
fn utc_clock() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let day = secs % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        day / 3600,
        day % 3600 / 60,
        day % 60
    )
}

/// Parse `10s`, `2m`, `1h`, `500ms` or a bare number of seconds (more than 0, at most
/// [`crate::flags::MAX_DURATION_S`]).
///
/// # Errors
/// Anything else, including values that do not fit a `Duration` (never a panic).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    crate::flags::duration_between(0.001, crate::flags::MAX_DURATION_S)(s)
}

/// What identifies a compressed file's content: (device, inode), length, modification time.
type Stamp = (Option<(u64, u64)>, u64, Option<std::time::SystemTime>);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((file_ident(path), m.len(), m.modified().ok()))
}

/// Logs that keep their file open between polls: the first this many followed; every other
/// one is reopened at the offset it reached on each poll and closed after it. A directory of
/// 3,000 logs held a descriptor each, and the files past the open-file limit were never read
/// (a note each, "Too many open files", every period).
pub const MAX_OPEN_LOGS: usize = 64;

/// One followed log: its reader, and what identifies the file it reads (for rotation).
struct Followed {
    path: PathBuf,
    source: diagnosis::SourceId,
    reader: Option<LogReader<Box<dyn std::io::Read>>>,
    ident: Option<(u64, u64)>,
    offset: u64,
    /// Whether the file stays open between polls ([`MAX_OPEN_LOGS`]).
    keep_open: bool,
    /// The reader's file was given back after the last poll (an empty input in its place):
    /// it is reopened at `pos` on the next.
    detached: bool,
    /// Bytes of the file read so far: the lines delivered and an unterminated last line
    /// held back (bytes).
    pos: u64,
    stats: ParseStats,
    /// A compressed file is read once, whole: the stamp it had then (None: not read yet, or not
    /// compressed).
    compressed_read: Option<Stamp>,
    /// A changed compressed file was noted already.
    compressed_change_noted: bool,
}

fn file_ident(path: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        Some((0, 0))
    }
}

impl Followed {
    /// Read what was appended; reopen when the file was rotated (new inode) or truncated.
    fn poll(&mut self, b: &mut EvidenceBuilder, notes: &mut Vec<String>) {
        // A compressed log cannot be followed by offset (its decompressed length is not the
        // file's): it is read once; a change afterwards is said, not read again (that would
        // count its lines twice).
        if let Some(read) = &self.compressed_read {
            if stamp(&self.path).as_ref() != Some(read) && !self.compressed_change_noted {
                self.compressed_change_noted = true;
                notes.push(format!(
                    "{}: changed since it was read; a compressed log is read once in live mode (restart to read it again)",
                    self.path.display()
                ));
            }
            return;
        }
        if self.reader.is_none() && crate::logfile::is_gzip(&self.path) {
            let before = stamp(&self.path);
            match LogReader::open(&self.path) {
                Ok(mut r) => {
                    let id = self.source;
                    match r.for_each(|rec| b.push(id, rec)) {
                        Ok(s) => {
                            self.stats.merge(&s);
                            b.finish_source(id, &self.stats);
                        }
                        Err(e) => notes.push(format!("{e}")),
                    }
                    self.compressed_read = before;
                }
                Err(e) => notes.push(format!("{e}")),
            }
            return;
        }
        let ident = file_ident(&self.path);
        let len = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
        let rotated = self.reader.is_some() && (ident != self.ident || len < self.offset);
        if rotated {
            notes.push(format!(
                "{}: rotated or truncated; reading the new file from its start",
                self.path.display()
            ));
            self.reader = None;
            self.offset = 0;
        }
        if self.reader.is_none() {
            match LogReader::open(&self.path) {
                Ok(r) => {
                    self.reader = Some(r.live(true));
                    self.ident = ident;
                    (self.pos, self.detached) = (0, false);
                }
                Err(e) => {
                    notes.push(format!("{e}"));
                    return;
                }
            }
        } else if self.detached {
            // the same file (checked above by its identity), taken up where it was left
            match reopen_at(&self.path, self.pos, self.ident) {
                Ok(f) => {
                    if let Some(r) = self.reader.as_mut() {
                        r.replace_input(Box::new(f));
                    }
                    self.detached = false;
                }
                Err(e) => {
                    notes.push(format!("{}: {e}", self.path.display()));
                    return;
                }
            }
        }
        if let Some(r) = self.reader.as_mut() {
            let id = self.source;
            match r.for_each(|rec| b.push(id, rec)) {
                Ok(s) => {
                    self.offset += s.bytes;
                    self.pos = self.offset + s.held_back_bytes;
                    self.stats.merge(&s);
                    b.finish_source(id, &self.stats);
                }
                Err(e) => notes.push(format!("{e}")),
            }
            if !self.keep_open && !self.detached {
                // give the descriptor back until the next poll
                r.replace_input(Box::new(std::io::empty()));
                self.detached = true;
            }
        }
    }
}

/// The file `path` opened and positioned at byte `pos`, if it is still the file `ident`
/// names (a file rotated since the identity was read is an error: the next poll reads the
/// new one from its start).
fn reopen_at(path: &Path, pos: u64, ident: Option<(u64, u64)>) -> std::io::Result<std::fs::File> {
    use std::io::{Seek as _, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = f.metadata()?;
        if ident.is_some_and(|i| i != (m.dev(), m.ino())) {
            return Err(std::io::Error::other(
                "replaced while it was being followed; reading the new file on the next poll",
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = ident;
    f.seek(SeekFrom::Start(pos))?;
    Ok(f)
}

/// How long one `/metrics` poll (and the server-info fetch) may take in live mode: one period,
/// at least 1 s and at most 30 s.
pub fn poll_timeout(period: Duration) -> Duration {
    period.clamp(Duration::from_secs(1), Duration::from_secs(30))
}

/// Run the live loop. `max_reports` stops after that many reports (tests); `None` runs until Ctrl-C.
///
/// # Errors
/// No log to follow, or the async runtime cannot start.
pub fn run(args: &DiagnoseArgs, period: Duration, max_reports: Option<u64>) -> Result<()> {
    anyhow::ensure!(
        !args.logs.is_empty() || args.server.is_some(),
        "--watch needs a log (--log PATH) or --server URL to follow"
    );
    // a directory is followed as the log files it holds now (as one-shot `diagnose` reads it)
    let mut skipped = Vec::new();
    let paths = crate::logfile::expand_log_dirs(&args.logs, &mut skipped)?;
    for w in &skipped {
        eprintln!("warning: {}", crate::flags::one_line(w));
    }
    let mut b = EvidenceBuilder::new();
    let mut followed: Vec<Followed> = paths
        .iter()
        .enumerate()
        .map(|(k, p)| Followed {
            path: p.clone(),
            source: b.add_source(p.display().to_string()),
            reader: None,
            ident: None,
            offset: 0,
            keep_open: k < MAX_OPEN_LOGS,
            detached: false,
            pos: 0,
            stats: ParseStats::default(),
            compressed_read: None,
            compressed_change_noted: false,
        })
        .collect();
    // The static context (server info, GPU, model, client) is read once; /metrics every period.
    let ctx = build_context(args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // A poll may take at most one period (at least 1 s): a server that does not answer must not
    // hold up the report.
    let poll_timeout = poll_timeout(period);
    let client = args.server.as_ref().and_then(|url| {
        let mut cfg = sglang_client::ClientConfig::new(url.clone())
            .api_key_from_env(sglang_client::API_KEY_ENV);
        cfg.info_timeout = poll_timeout;
        cfg.connect_timeout = cfg.connect_timeout.min(poll_timeout);
        sglang_client::SglangClient::new(cfg).ok()
    });
    let mut last_gen_total: Option<(std::time::Instant, f64)> = None;
    let mut reports = 0u64;
    let mut out = anstream::stdout();
    loop {
        let mut notes = Vec::new();
        for f in &mut followed {
            f.poll(&mut b, &mut notes);
        }
        let metrics_line = match &client {
            Some(c) => match rt.block_on(c.metrics()) {
                Ok(m) => {
                    let now = std::time::Instant::now();
                    let gen_total = m.total(|x| x.generation_tokens_total);
                    let rate = match (last_gen_total, gen_total) {
                        (Some((t0, g0)), Some(g1)) if g1 >= g0 => {
                            Some((g1 - g0) / now.duration_since(t0).as_secs_f64().max(1e-9))
                        }
                        _ => None,
                    };
                    if let Some(g) = gen_total {
                        last_gen_total = Some((now, g));
                    }
                    let f = |v: Option<f64>, d: usize| {
                        v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "?".into())
                    };
                    format!(
                        "/metrics: running {} · queued {} · token usage {} · gen throughput {} tok/s · generated tokens rate since last poll {} tok/s",
                        f(m.total(|x| x.num_running_reqs), 0),
                        f(m.total(|x| x.num_queue_reqs), 0),
                        f(
                            m.sets.iter().filter_map(|x| x.token_usage).reduce(f64::max),
                            2
                        ),
                        f(m.total(|x| x.gen_throughput), 1),
                        f(rate, 1)
                    ) + &m
                        .not_summed
                        .iter()
                        .map(|n| format!(" · {n}"))
                        .collect::<String>()
                }
                Err(e @ sglang_client::ClientError::Timeout { .. }) => format!(
                    "/metrics: poll timed out after {:.1} s ({e}); the report goes on without it",
                    poll_timeout.as_secs_f64()
                ),
                Err(e) => format!("/metrics: {e}"),
            },
            None => String::new(),
        };
        // A rolling verdict: the recent past of the log, not its whole history.
        let all = b.snapshot();
        // two servers (or runs) are not one rolling verdict either (see `read_logs`)
        crate::check_one_server(&all)?;
        let window_s = (period.as_secs_f64() * 10.0).max(ROLLING_WINDOW_MIN_S);
        let recent = match all.latest_time() {
            Some(t) => all.since(t - window_s),
            None => all,
        };
        let report = diagnosis::diagnose_with(&recent, &ctx);
        reports += 1;
        writeln!(
            out,
            "── report {reports} at {} (verdict over the last {:.0} s of the log) ──",
            utc_clock(),
            window_s
        )?;
        writeln!(out, "Verdict: {}", report.headline.text)?;
        for i in &report.inputs {
            writeln!(
                out,
                "  {}: {} lines, {} decode, {} prefill, {} malformed",
                i.name, i.lines, i.decode_lines, i.prefill_lines, i.malformed_lines
            )?;
        }
        if !metrics_line.is_empty() {
            writeln!(out, "  {metrics_line}")?;
        }
        for n in &notes {
            writeln!(out, "  note: {n}")?;
        }
        if let Some(f) = report.findings.first() {
            writeln!(out, "  top finding: {}", f.title)?;
        }
        out.flush()?;
        if max_reports.map(|m| reports >= m).unwrap_or(false) {
            break;
        }
        let stop = rt.block_on(async {
            tokio::select! {
                _ = tokio::time::sleep(period) => false,
                _ = tokio::signal::ctrl_c() => true,
            }
        });
        if stop {
            writeln!(out, "stopped (Ctrl-C); final report:")?;
            let report = diagnosis::diagnose_with(&b.snapshot(), &ctx);
            write!(out, "{}", render::text(&report, true))?;
            break;
        }
    }
    Ok(())
}
