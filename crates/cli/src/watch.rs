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

/// Parse `10s`, `2m`, `1h`, `500ms` or a bare number of seconds.
///
/// # Errors
/// Anything else.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("not a duration: {s:?} (use e.g. 10s, 2m)"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("duration must be > 0: {s:?}"));
    }
    Ok(Duration::from_secs_f64(v * mult))
}

/// One followed log: its reader, and what identifies the file it reads (for rotation).
struct Followed {
    path: PathBuf,
    source: diagnosis::SourceId,
    reader: Option<LogReader<Box<dyn std::io::Read>>>,
    ident: Option<(u64, u64)>,
    offset: u64,
    stats: ParseStats,
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
                }
                Err(e) => {
                    notes.push(format!("{e}"));
                    return;
                }
            }
        }
        if let Some(r) = self.reader.as_mut() {
            let id = self.source;
            match r.for_each(|rec| b.push(id, rec)) {
                Ok(s) => {
                    self.offset += s.bytes;
                    self.stats.merge(&s);
                    b.finish_source(id, &self.stats);
                }
                Err(e) => notes.push(format!("{e}")),
            }
        }
    }
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
    let mut b = EvidenceBuilder::new();
    let mut followed: Vec<Followed> = args
        .logs
        .iter()
        .map(|p| Followed {
            path: p.clone(),
            source: b.add_source(p.display().to_string()),
            reader: None,
            ident: None,
            offset: 0,
            stats: ParseStats::default(),
        })
        .collect();
    // The static context (server info, GPU, model, client) is read once; /metrics every period.
    let ctx = build_context(args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let client = args.server.as_ref().and_then(|url| {
        sglang_client::SglangClient::new(
            sglang_client::ClientConfig::new(url.clone())
                .api_key_from_env(sglang_client::API_KEY_ENV),
        )
        .ok()
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
                    )
                }
                Err(e) => format!("/metrics: {e}"),
            },
            None => String::new(),
        };
        // A rolling verdict: the recent past of the log, not its whole history.
        let all = b.snapshot();
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
