//! The `throughput-doctor` command line, as a library so that `xtask` and the end-to-end tests
//! run exactly the code the binary runs.
//!
//! Library crates return typed errors; this crate decides how to print them. Data goes to stdout,
//! diagnostics to stderr; exit codes are 0 (ok), 1 (failure), 2 (bad arguments).

pub mod batch_cmd;
pub mod case_dir;
pub mod flags;
pub mod fleet;
pub mod logfile;
pub mod plot;
pub mod render;
pub mod serve;
pub mod sources;
pub mod watch;

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, Parser, Subcommand};
use diagnosis::{Context, Evidence, EvidenceBuilder, Report};
use sglang_log::{FormatSniffer, LogReader};

/// The embedded sample: a simulated 2-hour run of Kimi-K2.5 on 8 RTX PRO 6000 Blackwell GPUs (TP8),
/// 150 long requests fired at once (see `tests/data/scenarios/README.md`).
pub const SAMPLE_LOG: &[u8] =
    include_bytes!("../../../tests/data/scenarios/kimi-k25-b2/server.log");
/// Name under which the embedded sample is reported.
pub const SAMPLE_NAME: &str = "<embedded sample: kimi-k25-b2/server.log>";
/// The rest of the embedded scenario, used when no other source is given either: what
/// `/get_server_info` returned, `nvidia-smi --query-gpu` CSV, the model's `config.json`, the
/// client's progress log and its responses dump.
const SAMPLE_SERVER_INFO: &str =
    include_str!("../../../tests/data/scenarios/kimi-k25-b2/server_info.json");
const SAMPLE_NVIDIA_SMI: &str =
    include_str!("../../../tests/data/scenarios/kimi-k25-b2/nvidia-smi.csv");
const SAMPLE_CONFIG: &str = include_str!("../../../tests/data/scenarios/kimi-k25-b2/config.json");
const SAMPLE_CLIENT_LOG: &str =
    include_str!("../../../tests/data/scenarios/kimi-k25-b2/client.log");
const SAMPLE_RESPONSES: &str =
    include_str!("../../../tests/data/scenarios/kimi-k25-b2/responses.jsonl");

/// True when `diagnose` runs on the embedded sample: the user gave no evidence at all (no log,
/// no server, no server info, no GPU, no model config, no client file). Any one of them means
/// the user wants *their* run diagnosed, and mixing in the sample's simulated server would
/// compare their data with made-up numbers.
fn uses_sample(args: &DiagnoseArgs) -> bool {
    args.logs.is_empty()
        && args.log_flag.is_empty()
        && args.server.is_none()
        && args.server_info.is_none()
        && !args.gpu
        && args.gpu_snapshot.is_none()
        && args.model_config.is_none()
        && args.client_log.is_none()
        && args.client_records.is_none()
        && args.prometheus.prometheus.is_none()
}

/// True when `--server` is given and no other evidence is.
fn server_is_the_only_source(args: &DiagnoseArgs) -> bool {
    args.server.is_some()
        && uses_sample(&DiagnoseArgs {
            server: None,
            ..args.clone()
        })
}

/// The embedded scenario's other artifacts (only ever used when the user gave no input).
fn add_sample_context(ctx: &mut Context) {
    let name = |f: &str| format!("<embedded sample: kimi-k25-b2/{f}>");
    if let Ok(info) = sglang_client::ServerInfo::from_json_str(SAMPLE_SERVER_INFO) {
        ctx.server = Some(sources::server_facts(&info, &name("server_info.json")));
    }
    if let Ok(snap) = gpu_probe::parse_nvidia_smi(SAMPLE_NVIDIA_SMI, &name("nvidia-smi.csv")) {
        sources::add_gpu_snapshot(ctx, &snap, &name("nvidia-smi.csv"));
    }
    if let Ok(config) = kv_capacity::ModelConfig::from_hf_json(SAMPLE_CONFIG) {
        ctx.model = Some(diagnosis::ModelFacts {
            source: name("config.json"),
            config,
        });
    }
    ctx.clients.push(sglang_log::parse_client(
        name("client.log"),
        SAMPLE_CLIENT_LOG,
    ));
    ctx.clients.push(sglang_log::parse_client(
        name("responses.jsonl"),
        SAMPLE_RESPONSES,
    ));
}

/// Command line.
#[derive(Debug, Parser)]
#[command(
    name = "throughput-doctor",
    version,
    about = "Why is my SGLang server slower than I expect? Numbers, causes, and what to change."
)]
pub struct Cli {
    /// When to colour the output: auto (a terminal, unless NO_COLOR is set), always, or never.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        default_value_t = ColorWhen::Auto,
        global = true,
        hide_possible_values = true
    )]
    pub color: ColorWhen,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `--color WHEN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// Colour when stdout/stderr is a terminal and NO_COLOR is not set.
    Auto,
    /// Always colour (even into a pipe, and over NO_COLOR).
    Always,
    /// Never colour.
    Never,
}

impl ColorWhen {
    fn apply(self) {
        let c = match self {
            ColorWhen::Auto => anstream::ColorChoice::Auto,
            ColorWhen::Always => anstream::ColorChoice::Always,
            ColorWhen::Never => anstream::ColorChoice::Never,
        };
        c.write_global();
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Diagnose a server from its logs and whatever else is given (server, GPU, model, client).
    Diagnose(DiagnoseArgs),
    /// Show GPU memory (total, used, free in MiB): this machine's through NVML, or a copied nvidia-smi output.
    Gpu(GpuArgs),
    /// Send a JSONL of prompts with bounded concurrency; record every response with its timings.
    RunBatch(batch_cmd::RunBatchArgs),
    /// Sidecar: re-diagnose servers and logs every interval and serve the findings as Prometheus metrics (/metrics) and JSON (/report.json) until Ctrl-C.
    Serve(serve::ServeCmd),
    /// Print a shell completion script for SHELL (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(CompletionsArgs),
    /// Write the man pages (roff) into DIR: throughput-doctor.1 and one page per subcommand (used by `cargo xtask man`).
    #[command(hide = true)]
    Man(ManArgs),
}

/// Arguments of the hidden `man` subcommand.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Directory to write the pages into (created when missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Writes `throughput-doctor.1` and `throughput-doctor-SUB.1` for each visible subcommand into
/// `dir`; returns the paths written.
///
/// # Errors
/// The directory cannot be created or a page cannot be written (the message names the path).
pub fn write_man_pages(dir: &std::path::Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let cmd = command();
    let mut written = Vec::new();
    let mut page = |name: String, c: clap::Command| -> Result<()> {
        let path = dir.join(format!("{name}.1"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(c.display_name(name.clone()))
            .render(&mut buf)
            .with_context(|| format!("rendering {}", path.display()))?;
        std::fs::write(&path, buf).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
        Ok(())
    };
    page("throughput-doctor".into(), cmd.clone())?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let bin = format!("throughput-doctor {}", sub.get_name());
        page(
            format!("throughput-doctor-{}", sub.get_name()),
            sub.clone().bin_name(bin),
        )?;
    }
    Ok(written)
}

/// Arguments of `completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell, e.g. bash (save to a file your shell sources: `throughput-doctor completions bash > ~/.local/share/bash-completion/completions/throughput-doctor`).
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// The clap definition, for completions and the man page (`cargo xtask man`).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Arguments of `diagnose`.
#[derive(Debug, Args, Default, Clone)]
pub struct DiagnoseArgs {
    /// SGLang server logs: plain text, .gz, a directory (every file under it whose name holds .log or ends in .out, .err or .txt: a job's rank and node logs, rotated parts), or `-` for stdin; several may be given (the ranks, nodes and rotated parts of one server run: the logs of a PD prefill instance and of a decode instance, or of two runs one after the other, are refused together). With no input at all (no log, --server, --server-info, --gpu, --gpu-snapshot, --model-config, --client-log or --client-records), the embedded sample is diagnosed.
    pub logs: Vec<PathBuf>,
    /// A live SGLang server's base URL (e.g. http://127.0.0.1:30000): reads /server_info (or /get_server_info) and polls /metrics. The API key, if any, comes from SGLANG_API_KEY. If it is the only input and cannot be reached, diagnose exits 1.
    #[arg(long, value_name = "URL", value_parser = flags::server_url)]
    pub server: Option<String>,
    /// With --server: how many /metrics polls to take, one second apart (0: none; at most 3600).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=3600))]
    pub metrics_polls: u32,
    /// A saved /server_info (or /get_server_info) JSON response.
    #[arg(long, value_name = "FILE")]
    pub server_info: Option<PathBuf>,
    /// Probe this machine's GPUs with NVML (total and free memory); use it on the GPU host itself.
    #[arg(long, conflicts_with = "gpu_snapshot")]
    pub gpu: bool,
    /// A copied `nvidia-smi` output (CSV from --query-gpu, the plain table, or -q).
    #[arg(long, value_name = "FILE")]
    pub gpu_snapshot: Option<PathBuf>,
    /// The model's Hugging Face config.json (KV cache bytes per token, for the KV capacity what-if table).
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<PathBuf>,
    /// What the client printed: a progress log (lines with a date-time and `N/M done`), a saved `python -m sglang.bench_serving` output (its 'Serving Benchmark Result' block), vllm bench serve's output or --save-result JSON, another benchmark client's run summary (AIPerf's profile_export_aiperf.json / .csv / console output, GuideLLM's benchmarks.csv / console output, an llm-d Benchmark Report v0.2), or SGLang's multi-turn benchmark summary ('Performance metrics summary:'). `-` reads it from standard input (a printout piped in).
    #[arg(long, value_name = "FILE")]
    pub client_log: Option<PathBuf>,
    /// The client's per-request records: run-batch output, AIPerf's profile_export.jsonl, GuideLLM's benchmarks.json / .yaml, bench_serving's --output-file, or any JSONL with times (seconds) and token counts. `-` reads them from standard input.
    #[arg(long, value_name = "FILE")]
    pub client_records: Option<PathBuf>,
    /// Length in seconds of a short measurement someone plans (e.g. 60 s of the request rate): the report says how uncertain a rate measured over that long is, and how long a window a ±10% answer needs.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0, value_parser = flags::seconds_between(1.0, flags::MAX_DURATION_S))]
    pub sample_window: f64,
    /// What you expect: a multiple (4x: of what the client prints when a client log gives it, and of the server's measured steady rate), a token rate (2500tok/s) or a request rate (0.4req/s, at the client's mean completion length); a number without its unit is refused. The report's second line says whether this setup can reach it, its ceiling, and what could.
    #[arg(long, value_name = "4x|NNNNtok/s", value_parser = flags::expectation)]
    pub expect: Option<diagnosis::Expectation>,
    /// Print the report as JSON (schema: docs/report-schema.md).
    #[arg(long)]
    pub json: bool,
    /// Also write the report as Markdown to this file (`-`: to stdout, in place of the text report).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Also write a timeline picture (throughput, requests, token usage) as SVG to this file (its name must end in .svg).
    #[arg(long, value_name = "FILE.svg", value_parser = flags::svg_path)]
    pub plot: Option<PathBuf>,
    /// A log to read (same as a positional LOG; may repeat). With --watch it is followed.
    #[arg(long = "log", value_name = "PATH")]
    pub log_flag: Vec<PathBuf>,
    /// Live mode: follow the logs (a directory: the log files in it when live mode starts), poll /metrics of --server, print a rolling verdict every DURATION (a number with ms, s, m or h, e.g. 10s; bare = seconds) until Ctrl-C. Its reports are text: --json, --markdown and --plot are refused with it.
    #[arg(long, value_name = "DURATION", value_parser = flags::duration_between(0.1, flags::MAX_DURATION_S), conflicts_with_all = ["json", "markdown", "plot"])]
    pub watch: Option<std::time::Duration>,
    /// With --watch: stop after this many reports (default: until Ctrl-C).
    #[arg(long, value_name = "N", requires = "watch", value_parser = clap::value_parser!(u64).range(1..))]
    pub watch_count: Option<u64>,
    /// `--prometheus` and its options (a fleet read from Prometheus).
    #[command(flatten)]
    pub prometheus: Box<fleet::PrometheusArgs>,
}

/// Arguments of `gpu`.
#[derive(Debug, Args, Default)]
pub struct GpuArgs {
    /// Read a copied nvidia-smi output (CSV from --query-gpu, the plain table, or -q) instead of probing this machine.
    #[arg(long, value_name = "FILE")]
    pub snapshot: Option<PathBuf>,
    /// Print the snapshot as JSON (memory in bytes) instead of text (MiB, rounded up as nvidia-smi
    /// rounds); with --check, both snapshots and the mismatches.
    #[arg(long)]
    pub json: bool,
    /// Real-hardware check: probe with NVML, run `nvidia-smi --query-gpu`, print both one after
    /// the other and exit 1 if they disagree (other GPUs or driver, total memory more than 1 MiB
    /// apart, used or free more than 64 MiB apart).
    #[arg(long, conflicts_with = "snapshot")]
    pub check: bool,
}

/// How far apart NVML's and `nvidia-smi`'s used and free may be in `gpu --check`: memory moves
/// between the two reads (a process allocating), and 64 MiB is far below any figure that
/// changes a diagnosis while far above nvidia-smi's rounding (up to 1 MiB).
const GPU_CHECK_TOLERANCE_BYTES: u64 = 64 * 1024 * 1024;

/// `gpu --check`: NVML beside `nvidia-smi`; with `json`, both snapshots and the mismatches as
/// one JSON object.
fn gpu_check(json: bool) -> Result<()> {
    let nvml = gpu_probe::probe()?;
    let out = std::process::Command::new("nvidia-smi")
        .args(gpu_probe::NVIDIA_SMI_QUERY_ARGS)
        .output()
        .context("running nvidia-smi")?;
    anyhow::ensure!(
        out.status.success(),
        "nvidia-smi failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let smi = gpu_probe::parse_nvidia_smi(&text, "nvidia-smi")?;
    let mismatches = gpu_probe::cross_check(&nvml, &smi, GPU_CHECK_TOLERANCE_BYTES);
    let command = format!("nvidia-smi {}", gpu_probe::NVIDIA_SMI_QUERY_ARGS.join(" "));
    let mut o = anstream::stdout();
    if json {
        let v = serde_json::json!({
            "nvml": nvml,
            "nvidia_smi": smi,
            "nvidia_smi_command": command,
            "tolerance_bytes": GPU_CHECK_TOLERANCE_BYTES,
            "agree": mismatches.is_empty(),
            "mismatches": mismatches,
        });
        writeln!(o, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        let t = render::gpu_check_text(
            &nvml,
            &smi,
            &command,
            &mismatches,
            GPU_CHECK_TOLERANCE_BYTES,
        );
        write!(o, "{t}")?;
    }
    anyhow::ensure!(
        mismatches.is_empty(),
        "{} mismatch(es) between NVML and nvidia-smi",
        mismatches.len()
    );
    Ok(())
}

/// Read the logs (or the embedded sample) into evidence. Problems that do not stop the read
/// (a truncated gzip file) are pushed to `warnings`, each naming its file.
///
/// # Errors
/// A log that cannot be opened or read (the error names the path); logs that are all empty,
/// another format's, a client's progress log, unrecognised text or no text at all
/// ([`sglang_log::NotSglangLog`], with what to give instead).
pub fn read_logs(args: &DiagnoseArgs, warnings: &mut Vec<String>) -> Result<Evidence> {
    let mut b = EvidenceBuilder::new();
    if uses_sample(args) {
        eprintln!(
            "note: no input given, so this diagnoses the embedded sample (a simulated Kimi-K2.5 run with its server info, nvidia-smi, \
             model config and client logs); pass your server log to diagnose yours"
        );
        let id = b.add_source(SAMPLE_NAME);
        let mut reader = LogReader::from_reader(SAMPLE_NAME, SAMPLE_LOG);
        let stats = reader
            .for_each(|rec| b.push(id, rec))
            .context("reading the embedded sample")?;
        b.finish_source(id, &stats);
    }
    let mut not_sglang = Vec::new();
    let paths = logfile::expand_log_dirs(&args.logs, warnings)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // each file's kind, looked at once: consecutive small plain files are read a file per
    // core (a large one is split into chunks across the cores by `read_log_into`); the
    // evidence takes them in order
    let small: Vec<bool> = paths.iter().map(|p| logfile::is_small_plain(p)).collect();
    let mut at = 0;
    while at < paths.len() {
        let run = small[at..].iter().take_while(|&&s| s).count();
        if run >= 2 && threads > 1 {
            logfile::read_small_logs(&paths[at..at + run], threads, |path, read| {
                let id = b.add_source(path.display().to_string());
                // The reader's errors name the path (and line) themselves.
                let mut log = read?;
                b.push_chunk(id, &mut log.facts, 0);
                let (read, sniff) = (log.read, &log.sniff);
                end_of_log(&mut b, id, path, read, sniff, warnings, &mut not_sglang);
                anyhow::Ok(())
            })?;
            at += run;
            continue;
        }
        let path = &paths[at];
        let id = b.add_source(path.display().to_string());
        let mut sniff = FormatSniffer::new();
        // The reader's errors name the path (and line) themselves.
        let read = logfile::read_log_into(path, &mut b, id, &mut sniff)?;
        end_of_log(&mut b, id, path, read, &sniff, warnings, &mut not_sglang);
        at += 1;
    }
    // A file that is not an SGLang log is an error when it is all there is to read; beside
    // SGLang logs (a job directory holding other tools' output) it is skipped, and said.
    if !paths.is_empty() && not_sglang.len() == paths.len() {
        let e = not_sglang.swap_remove(0);
        // the typed error stays the cause; the line printed is its text and the hint
        let line = format!("{e}{}", logfile::foreign_hint(&e));
        return Err(anyhow::Error::new(e).context(line));
    }
    for e in not_sglang {
        warnings.push(format!("skipped {e}"));
    }
    let ev = b.build();
    check_one_server(&ev)?;
    Ok(ev)
}

/// One diagnosis is of one server run: the logs of a PD prefill instance and a decode
/// instance ([`Evidence::mixed_pd_roles`]), of two runs one after the other
/// ([`Evidence::separate_runs`]), or of two servers side by side
/// ([`Evidence::concurrent_servers`]), are refused together, in one line that names them.
///
/// # Errors
/// The refusal, when the evidence holds either.
pub(crate) fn check_one_server(ev: &Evidence) -> Result<()> {
    if let Some(roles) = ev.mixed_pd_roles() {
        anyhow::bail!("{}", mixed_pd_roles_text(ev, &roles));
    }
    if let Some((earlier, later)) = ev.separate_runs() {
        anyhow::bail!("{}", separate_runs_text(ev, earlier, later));
    }
    if let Some((a, b)) = ev.concurrent_servers() {
        anyhow::bail!("{}", concurrent_servers_text(ev, a, b));
    }
    Ok(())
}

/// Why the logs of two servers that ran at the same time are not diagnosed as one, and the
/// command for each.
fn concurrent_servers_text(
    ev: &Evidence,
    a: diagnosis::evidence::SourceId,
    b: diagnosis::evidence::SourceId,
) -> String {
    let name =
        |id: diagnosis::evidence::SourceId| ev.sources.get(id).map_or("", |s| s.name.as_str());
    let (x, y) = (name(a), name(b));
    let how = match (shell_word(x), shell_word(y)) {
        (Some(p), Some(q)) => {
            format!(": `throughput-doctor diagnose {p}` and `throughput-doctor diagnose {q}`")
        }
        _ => String::new(),
    };
    format!(
        "{} and {} each open with a server's startup lines and show the same scheduler's batch \
         lines over the same time, with different figures: these are two servers that ran side \
         by side, not ranks or parts of one. Read together, their schedulers would be summed as \
         one server's; diagnose each on its own{how}",
        shown_name(x),
        shown_name(y)
    )
}

/// A name as a shell word, if it can be written as one on a line (no control character, no
/// byte that is not UTF-8).
fn shell_word(name: &str) -> Option<String> {
    if name
        .chars()
        .any(|c| c.is_control() || c == char::REPLACEMENT_CHARACTER)
    {
        return None;
    }
    shlex::try_quote(name).ok().map(|q| q.into_owned())
}

/// A name as it is shown in a one-line error: a shell word, else escaped.
fn shown_name(name: &str) -> String {
    shell_word(name).unwrap_or_else(|| name.escape_debug().to_string())
}

/// Why two logs of separate server runs are not diagnosed as one, and the command for each.
fn separate_runs_text(
    ev: &Evidence,
    earlier: diagnosis::evidence::SourceId,
    later: diagnosis::evidence::SourceId,
) -> String {
    let name =
        |id: diagnosis::evidence::SourceId| ev.sources.get(id).map_or("", |s| s.name.as_str());
    let (a, b) = (name(earlier), name(later));
    let how = match (shell_word(a), shell_word(b)) {
        (Some(x), Some(y)) => {
            format!(": `throughput-doctor diagnose {x}` and `throughput-doctor diagnose {y}`")
        }
        _ => String::new(),
    };
    format!(
        "{} opens with a server's startup lines and its batch lines begin after those of {} \
         end: these are two server runs, not parts of one log (a rotated part has no startup \
         lines; the logs of one run's nodes overlap in time). Read together, their schedulers \
         would be joined into one timeline under one run's limits; diagnose each run on its own{how}",
        shown_name(b),
        shown_name(a)
    )
}

/// Files of one PD instance named in [`mixed_pd_roles_text`] before "and N more".
const PD_FILES_SHOWN: usize = 3;

/// Why logs of a PD prefill instance and a PD decode instance are not diagnosed as one server,
/// and the commands that diagnose each: the error [`read_logs`] (and live mode) returns for
/// them, one line. Each instance's files are named, the first [`PD_FILES_SHOWN`] of them then
/// a count; the commands are given when every file is named and each name can be written as a
/// shell word (quoted where needed); a name with a control character or bytes that are not
/// UTF-8 is shown escaped.
fn mixed_pd_roles_text(
    ev: &Evidence,
    roles: &[(
        diagnosis::evidence::PdRole,
        Vec<diagnosis::evidence::SourceId>,
    )],
) -> String {
    use diagnosis::evidence::PdRole;
    let names = |ids: &[diagnosis::evidence::SourceId]| -> Vec<&str> {
        ids.iter()
            .filter_map(|&id| ev.sources.get(id))
            .map(|s| s.name.as_str())
            .collect()
    };
    let role_name = |r: PdRole| match r {
        PdRole::Prefill => "prefill",
        PdRole::Decode => "decode",
    };
    let groups: Vec<String> = roles
        .iter()
        .map(|(r, ids)| {
            let all = names(ids);
            let mut listed: Vec<String> = all
                .iter()
                .take(PD_FILES_SHOWN)
                .map(|n| shown_name(n))
                .collect();
            if all.len() > PD_FILES_SHOWN {
                listed.push(format!("and {} more", all.len() - PD_FILES_SHOWN));
            }
            format!("{} instance ({})", role_name(*r), listed.join(", "))
        })
        .collect();
    let commands: Option<Vec<String>> = roles
        .iter()
        .map(|(_, ids)| {
            let all = names(ids);
            if all.len() > PD_FILES_SHOWN {
                return None;
            }
            let words: Option<Vec<String>> = all.iter().map(|n| shell_word(n)).collect();
            Some(format!("`throughput-doctor diagnose {}`", words?.join(" ")))
        })
        .collect();
    let how = match commands {
        Some(c) => format!(": {}", c.join(" and ")),
        None => " (each instance's files, or a directory of them, in a run of its own)".into(),
    };
    format!(
        "these logs come from different servers of a PD-disaggregated deployment (as their \
         disaggregation_mode or the PD fields of their batch lines show): the {}. Each instance \
         has its own KV pool, limits and DP ranks, so one diagnosis of both would join unrelated \
         schedulers and apply one instance's limits to the other; diagnose each instance's logs \
         on their own{how}",
        groups.join(" and the ")
    )
}

/// What follows the read of log `id` (its path, what the read reported, what its
/// records look like), however it was read: its counts close the source, its warnings are
/// kept (with a hint when it is a client's progress log), and a file that is not an SGLang log
/// is noted for `read_logs`.
fn end_of_log(
    b: &mut EvidenceBuilder,
    id: diagnosis::evidence::SourceId,
    path: &std::path::Path,
    read: logfile::LogRead,
    sniff: &FormatSniffer,
    warnings: &mut Vec<String>,
    not_sglang: &mut Vec<sglang_log::NotSglangLog>,
) {
    let name = &path.display().to_string();
    b.finish_source(id, &read.stats);
    // a job directory's client log read as a server log: it holds no server line, and
    // passing it as the client is what would use it
    // counted as the log was read: a FIFO cannot be read a second time
    let progress = read.stats.events == 0 && read.stats.lines > 0 && read.progress_lines >= 2;
    if progress {
        warnings.push(format!(
            "{name}: its lines are a client's progress log (`date-time ... N/M done`), not a server log; pass it as --client-log {} to compare the client's rate with the server's",
            shown_name(name)
        ));
    }
    warnings.extend(read.warnings);
    // unrecognised bytes that are not text at all: the refusal says so
    let not_text = read
        .stats
        .head
        .filter(|_| read.stats.events == 0)
        .and_then(|h| h.not_text_reason());
    // a client's progress log given as the log: the refusal names the option that takes it
    not_sglang.extend(sniff.error(name).map(|e| match (e, not_text) {
        (sglang_log::NotSglangLog::Unrecognised { path, .. }, _) if progress => {
            sglang_log::NotSglangLog::ClientProgress { path }
        }
        (sglang_log::NotSglangLog::Unrecognised { path, .. }, Some(why)) => {
            sglang_log::NotSglangLog::NotText {
                path,
                why: why.to_string(),
            }
        }
        (e, _) => e,
    }));
}

/// Gather the evidence beside the logs. A server that cannot be reached narrows the report;
/// a file named on the command line that cannot be read is an error.
///
/// # Errors
/// An unreadable or unrecognisable `--server-info`, `--gpu-snapshot`, `--model-config`,
/// `--client-log` or `--client-records` file (the message names it); a `--server` that is the
/// only input and answered nothing (outside live mode).
pub fn build_context(args: &DiagnoseArgs) -> Result<Context> {
    // standard input can be read once: by one log or by one side file (`flags::read_capped`)
    let from_stdin = args
        .logs
        .iter()
        .chain(&args.log_flag)
        .chain(&args.client_log)
        .chain(&args.client_records)
        .chain(&args.server_info)
        .chain(&args.model_config)
        .filter(|p| flags::is_stdin(p))
        .count();
    anyhow::ensure!(
        from_stdin <= 1,
        "standard input (-) is given {from_stdin} times: it can be read once, by one log or by one file of --client-log, --client-records, --server-info or --model-config; save the others to files"
    );
    let mut ctx = Context {
        sample_window_s: Some(args.sample_window),
        expectation: args.expect,
        ..Context::default()
    };
    if let Some(p) = &args.server_info {
        sources::add_server_info_file(&mut ctx, p)?;
    }
    if let Some(p) = &args.gpu_snapshot {
        sources::add_gpu_snapshot_file(&mut ctx, p)?;
    }
    if let Some(p) = &args.model_config {
        sources::add_model_config(&mut ctx, p)?;
    }
    if let Some(p) = &args.client_log {
        sources::add_client_file(&mut ctx, p, "--client-log")?;
    }
    if let Some(p) = &args.client_records {
        sources::add_client_file(&mut ctx, p, "--client-records")?;
    }
    if args.gpu {
        sources::add_gpu_probe(&mut ctx);
        // Only when diagnosing on the GPU host itself is this machine's RAM the server's.
        sources::add_host_meminfo(&mut ctx);
    }
    if uses_sample(args) {
        add_sample_context(&mut ctx);
    }
    if let Some(url) = &args.server {
        // Live mode polls /metrics itself; a one-shot diagnosis takes a few polls a second apart.
        let polls = if args.watch.is_some() {
            0
        } else {
            args.metrics_polls
        };
        // Live mode bounds each call by one period: a silent server must not hold up the reports.
        let call_timeout = args.watch.map(watch::poll_timeout);
        let failure = sources::add_server_url_within(
            &mut ctx,
            url,
            polls,
            std::time::Duration::from_secs(1),
            call_timeout,
        );
        // With other evidence an unreachable server only narrows the report; alone, there is
        // nothing to diagnose, and a "no scheduler lines" verdict with exit 0 would hide that
        // the URL is wrong or the server is down. (Live mode keeps polling: it may come up.)
        if let Some(cause) = failure
            && args.watch.is_none()
            && server_is_the_only_source(args)
        {
            anyhow::bail!(
                "--server {}: {cause}; it was the only input, so there is nothing to diagnose \
                 (check the URL and that the server is up, or also give its log)",
                sglang_client::error::redact_url(url)
            );
        }
    }
    Ok(ctx)
}

/// Read every input and diagnose.
///
/// # Errors
/// See [`read_logs`].
pub fn diagnose(args: &DiagnoseArgs) -> Result<Report> {
    let (ev, ctx) = read_inputs(args)?;
    // the evidence is not kept: joined and ordered in place, not copied
    Ok(diagnosis::diagnose_owned(ev, &ctx))
}

/// Like [`diagnose`], also returning the evidence the logs gave (for plots, which draw it as
/// the diagnosis read it: `Evidence::consolidated`, joined and in time order; that copy is
/// made only when a plot is drawn).
///
/// # Errors
/// See [`read_logs`].
pub fn diagnose_full(args: &DiagnoseArgs) -> Result<(Evidence, Report)> {
    let (ev, ctx) = read_inputs(args)?;
    let report = diagnosis::diagnose_with(&ev, &ctx);
    Ok((ev, report))
}

/// The evidence of the logs and the context of the other inputs, the warnings said on stderr
/// as they are found.
fn read_inputs(args: &DiagnoseArgs) -> Result<(Evidence, diagnosis::Context)> {
    // a case folder: its client log, GPU copy, config, server info and records take their roles
    let mut assigned = args.clone();
    for note in case_dir::assign_roles(&mut assigned)? {
        eprintln!("note: {}", flags::one_line(&note));
    }
    let args = &assigned;
    let mut ctx = build_context(args)?;
    let mut warnings = Vec::new();
    let ev = read_logs(args, &mut warnings)?;
    // Sources that failed (an unreachable server beside a log, ...) are said at once, not only
    // at the end of the report.
    for w in ctx.source_errors.iter().chain(&warnings) {
        eprintln!("warning: {}", flags::one_line(w));
    }
    // ...and in the report's "not concluded", beside the other sources' problems.
    ctx.source_errors.extend(warnings);
    Ok((ev, ctx))
}

/// Run `gpu`: print the snapshot, or exit 1 with a one-line reason.
///
/// # Errors
/// No GPU data (NVML unavailable, unreadable file).
pub fn run_gpu(args: &GpuArgs) -> Result<()> {
    if args.check {
        return gpu_check(args.json);
    }
    let snap = match &args.snapshot {
        Some(p) => gpu_probe::read_snapshot_file(p)?,
        None => gpu_probe::probe()?,
    };
    let mut out = anstream::stdout();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&snap)?)?;
    } else {
        write!(out, "{}", render::gpu_text(&snap))?;
    }
    Ok(())
}

/// Run `diagnose` and print the report.
///
/// # Errors
/// See [`diagnose`]; also a failure to write the Markdown file or stdout.
pub fn run_diagnose(args: &DiagnoseArgs) -> Result<()> {
    let merged;
    let args = if args.log_flag.is_empty() {
        args
    } else {
        let mut m = args.clone();
        let flagged = std::mem::take(&mut m.log_flag);
        m.logs.extend(flagged);
        merged = m;
        &merged
    };
    if let Some(period) = args.watch {
        return watch::run(args, period, args.watch_count);
    }
    // Output paths are checked before the work: a typo must not cost a whole diagnosis.
    let md_stdout = args.markdown.as_deref().is_some_and(flags::is_stdout);
    anyhow::ensure!(
        !(md_stdout && args.json),
        "--markdown - and --json both write to stdout; give --markdown a file"
    );
    if let Some(p) = &args.plot {
        flags::check_writable("--plot", p)?;
    }
    // An output that is one of the inputs would be overwritten by the report.
    let inputs: Vec<&std::path::Path> = args
        .logs
        .iter()
        .chain(&args.log_flag)
        .map(PathBuf::as_path)
        .chain(
            [
                &args.server_info,
                &args.gpu_snapshot,
                &args.model_config,
                &args.client_log,
                &args.client_records,
            ]
            .into_iter()
            .flatten()
            .map(PathBuf::as_path),
        )
        .collect();
    for (flag, out) in [("--markdown", &args.markdown), ("--plot", &args.plot)] {
        if let Some(out) = out
            && !flags::is_stdout(out)
            && let Some(input) = inputs.iter().find(|i| flags::same_file(i, out))
        {
            anyhow::bail!(
                "{flag} {} is also an input ({}): the report would overwrite it; give another path",
                out.display(),
                input.display()
            );
        }
    }
    if let Some(p) = &args.markdown {
        flags::check_writable("--markdown", p)?;
    }
    if args.prometheus.prometheus.is_some() {
        return fleet::run(args);
    }
    // the evidence is kept only for a plot, which draws it as the diagnosis read it
    let (ev, report) = if args.plot.is_some() {
        let (ev, report) = diagnose_full(args)?;
        (Some(ev), report)
    } else {
        (None, diagnose(args)?)
    };
    // The report first: a --plot or --markdown write that still fails must not hide it.
    let mut out = anstream::stdout();
    if args.json {
        let s = serde_json::to_string_pretty(&report).context("serialising the report")?;
        writeln!(out, "{s}")?;
    } else if md_stdout {
        write!(out, "{}", render::markdown(&report))?;
    } else {
        write!(out, "{}", render::text(&report, true))?;
    }
    out.flush()?;
    if let (Some(path), Some(ev)) = (&args.plot, &ev) {
        // PlotError::Io names the path itself.
        plot::write_svg(&ev.consolidated().0, &report, path).context("--plot")?;
    }
    if let Some(path) = args.markdown.as_ref().filter(|_| !md_stdout) {
        std::fs::write(path, render::markdown(&report))
            .with_context(|| format!("--markdown {}", path.display()))?;
    }
    Ok(())
}

/// One line for an error: the chain of causes, leaving out a cause whose text the line
/// already holds (typed errors often print their source too).
pub fn error_line(e: &anyhow::Error) -> String {
    flags::one_line(&error_chain(e)).into_owned()
}

/// The error's chain of causes as one line (see [`error_line`]).
fn error_chain(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
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
    cli.color.apply();
    let result = match &cli.command {
        Command::Completions(a) => {
            let mut cmd = command();
            clap_complete::generate(
                a.shell,
                &mut cmd,
                "throughput-doctor",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Man(a) => write_man_pages(&a.dir).map(|paths| {
            for p in paths {
                println!("{}", p.display());
            }
        }),
        Command::Diagnose(a) => run_diagnose(a),
        Command::Gpu(a) => run_gpu(a),
        Command::Serve(a) => serve::run(a),
        Command::RunBatch(a) => match batch_cmd::run(a) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => 0,
        // The reader of our stdout went away (`| head`): not an error of ours.
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("error: {}", error_line(&e));
            1
        }
    }
}
