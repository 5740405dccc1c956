//! The `throughput-doctor` command line, as a library so that `xtask` and the end-to-end tests
//! run exactly the code the binary runs.
//!
//! Library crates return typed errors; this crate decides how to print them. Data goes to stdout,
//! diagnostics to stderr; exit codes are 0 (ok), 1 (failure), 2 (bad arguments).

pub mod render;

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use diagnosis::{EvidenceBuilder, Report};
use sglang_log::LogReader;

/// The embedded sample: a simulated 2-hour run of Kimi-K2.5 on 8 RTX PRO 6000 Blackwell GPUs (TP8),
/// 150 long requests fired at once (see `tests/data/scenarios/README.md`).
pub const SAMPLE_LOG: &[u8] =
    include_bytes!("../../../tests/data/scenarios/kimi-k25-b2/server.log");
/// Name under which the embedded sample is reported.
pub const SAMPLE_NAME: &str = "<embedded sample: kimi-k25-b2/server.log>";

/// Command line.
#[derive(Debug, Parser)]
#[command(
    name = "throughput-doctor",
    version,
    about = "Why is my SGLang server slower than I expect? Numbers, causes, and what to change."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Diagnose a server from its logs (and, where given, other evidence).
    Diagnose(DiagnoseArgs),
}

/// Arguments of `diagnose`.
#[derive(Debug, Args, Default)]
pub struct DiagnoseArgs {
    /// SGLang server logs: plain, .gz, or `-` for stdin. With none, the embedded sample is used.
    pub logs: Vec<PathBuf>,
    /// Print the report as JSON (schema: docs/report-schema.md).
    #[arg(long)]
    pub json: bool,
    /// Also write the report as Markdown to this file.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// Read the logs (or the embedded sample) and diagnose.
///
/// # Errors
/// A log that cannot be opened or read (the error names the path).
pub fn diagnose(args: &DiagnoseArgs) -> Result<Report> {
    let mut b = EvidenceBuilder::new();
    if args.logs.is_empty() {
        let id = b.add_source(SAMPLE_NAME);
        let mut reader = LogReader::from_reader(SAMPLE_NAME, SAMPLE_LOG);
        let stats = reader
            .for_each(|rec| b.push(id, rec))
            .context("reading the embedded sample")?;
        b.finish_source(id, &stats);
    }
    for path in &args.logs {
        let name = path.display().to_string();
        let id = b.add_source(name.clone());
        let stats = if name == "-" {
            let stdin = std::io::stdin().lock();
            LogReader::from_reader("-", stdin).for_each(|rec| b.push(id, rec))
        } else {
            LogReader::open(path)
                .with_context(|| format!("opening {name}"))?
                .for_each(|rec| b.push(id, rec))
        }
        .with_context(|| format!("reading {name}"))?;
        b.finish_source(id, &stats);
    }
    Ok(diagnosis::diagnose(&b.build()))
}

/// Run `diagnose` and print the report.
///
/// # Errors
/// See [`diagnose`]; also a failure to write the Markdown file or stdout.
pub fn run_diagnose(args: &DiagnoseArgs) -> Result<()> {
    let report = diagnose(args)?;
    if let Some(path) = &args.markdown {
        std::fs::write(path, render::markdown(&report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = anstream::stdout();
    if args.json {
        let s = serde_json::to_string_pretty(&report).context("serialising the report")?;
        writeln!(out, "{s}")?;
    } else {
        write!(out, "{}", render::text(&report, true))?;
    }
    Ok(())
}

/// Entry point shared by the binary and `cargo xtask`: parse `args` (without the program name
/// handled by clap) and run. Returns the process exit code.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match &cli.command {
        Command::Diagnose(a) => run_diagnose(a),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}
