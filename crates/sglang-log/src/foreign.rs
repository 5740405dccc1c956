//! Is this an SGLang log at all? A file given as a server log that holds no SGLang line is
//! often another engine's log (vLLM, llama.cpp, TGI) or another kind of dump (a Prometheus
//! `/metrics` scrape, an `nvidia-smi` paste). [`FormatSniffer`] counts the signature lines of
//! each such format over the records of one file and [`FormatSniffer::classify`] says which
//! it is; [`NotSglangLog`] is the error a caller returns for it.
//!
//! A file with any SGLang content (a scheduler, startup, retraction or failure line, i.e. any
//! record that is not [`Event::Other`] or a bare traceback, or a benchmark summary block) is SGLang, whatever
//! else it holds: a job log mixes tools. The signatures are lines each format prints in
//! normal operation, taken from real logs:
//! - vLLM: the periodic stats line `Avg prompt throughput: … Avg generation throughput: …`
//!   (`metrics.py`, later `[loggers.py:N] Engine 000: …`; either half alone, since a terminal
//!   may wrap the line between them, and its `GPU KV cache usage:`), `vllm.entrypoints` module
//!   paths, the `vLLM API server version` banner, V1's process tags (`(APIServer pid=N)`,
//!   `(EngineCore_0 pid=N)`, `(VllmWorker rank=N pid=N)`), and any line in its logger's layout
//!   (`vllm/logger.py`: `%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s`,
//!   the date as `%m-%d %H:%M:%S`): `INFO 10-14 17:07:38 [loggers.py:123] …`. LightLLM
//!   copied that logger (`lightllm/utils/log_utils.py`) and Aphrodite forked vLLM: a file that
//!   names either is that engine's, whatever its layout lines;
//! - TensorRT-LLM: its loggers' tags `[TRT-LLM]` (Python, `tensorrt_llm/logger.py`) and
//!   `[TensorRT-LLM]` (C++ runtime);
//! - NVIDIA Dynamo: its Rust runtime's tracing targets `dynamo_runtime::…`, `dynamo_llm::…`;
//! - LMDeploy: its logger's ` - lmdeploy - ` field (`lmdeploy/utils.py`:
//!   `%(asctime)s - %(name)s - %(levelname)s - …`) and TurboMind's `[TM][` tags;
//! - Ollama: its gin access lines `[GIN] …`, slog lines from its own sources
//!   (`source=routes.go:`, `sched.go`, `server.go`, `images.go`) and `llama runner`;
//! - LightLLM, MLC-LLM, Aphrodite: their package names (`lightllm`, `mlc_llm`, `aphrodite`) in
//!   module paths and banners;
//! - llama.cpp (`llama-server`): `slot update_slots:` / `slot print_timing:` /
//!   `slot launch_slot_:` per-slot lines, `srv  log_server_r:` access lines and the loader's
//!   `llama_model_loader:` / `llm_load_print_meta:` / `llama_new_context_with_model:` lines;
//! - TGI: the `text_generation_router` / `text_generation_launcher` /
//!   `text_generation_server` targets of its tracing output;
//! - a Prometheus text exposition: `# HELP name …` / `# TYPE name …` lines;
//! - `nvidia-smi`: the table's `NVIDIA-SMI <version>` banner, the `-q` output's `NVSMI LOG`
//!   title, the command itself (`nvidia-smi …`), or the CSV header of a query
//!   (`memory.total [MiB]`, `memory.used [MiB]`: `--query-gpu=… --format=csv`).
//! - a Hugging Face model config (`config.json`): its `"model_type":` or `"architectures":`
//!   keys.
//! - NVIDIA AIPerf's console summary: its `NVIDIA AIPerf |` table titles.
//! - files the other options take, given as the log: a `/server_info` response (its
//!   `"model_path":`, `"tp_size":`, `"max_total_num_tokens":` keys), per-request JSONL records
//!   (`"prompt_tokens"` / `"completion_tokens"` on a JSON line), bench_serving's
//!   `--output-file` (a JSON line with `"backend":` and `"request_rate":`), AIPerf's
//!   per-request export (`"request_start_ns"`) and its summaries (`aiperf_version`, the CSV's
//!   `Metric,avg,min,max,sum,p1,` header), GuideLLM's report (`guidellm_version`) and console
//!   (loguru lines `…|INFO     |guidellm.benchmark…`). A line
//!   longer than the reader holds is looked at by its first bytes (a one-line JSON report).
//!
//! A file with none of these and no SGLang line is [`LogKind::Unrecognised`], also refused: a
//! line naming `sglang/srt/` or `sglang.srt` (a traceback of an SGLang process) counts as
//! SGLang content.
//!
//! The cost: a few substring searches per non-SGLang line, and none once the file has shown
//! SGLang content (the caller stops feeding it, see [`FormatSniffer::is_sglang`]).

use crate::{Event, Record};
use memchr::memmem;

/// A format that is not an SGLang server log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ForeignFormat {
    /// A vLLM server log.
    Vllm,
    /// A llama.cpp (`llama-server`) log.
    LlamaCpp,
    /// A Hugging Face text-generation-inference (TGI) log.
    Tgi,
    /// A TensorRT-LLM (`trtllm-serve`) log.
    TensorRtLlm,
    /// An NVIDIA Dynamo runtime log (its frontend or router; an SGLang worker's lines are
    /// SGLang's).
    Dynamo,
    /// An LMDeploy (TurboMind or PyTorch engine) log.
    LmDeploy,
    /// An Ollama server log.
    Ollama,
    /// A LightLLM log.
    LightLlm,
    /// An MLC-LLM (`mlc_llm serve`) log.
    MlcLlm,
    /// An Aphrodite Engine log.
    Aphrodite,
    /// A Prometheus text exposition (a saved `/metrics` response).
    PrometheusExposition,
    /// `nvidia-smi` output (table, `-q` or CSV query).
    NvidiaSmi,
    /// A Hugging Face model config (`config.json`).
    ModelConfig,
    /// NVIDIA AIPerf's console summary.
    AiperfConsole,
    /// bench_serving's `--output-file` (a JSON line per run).
    BenchServingResult,
    /// AIPerf's per-request export (`profile_export.jsonl`).
    AiperfRecords,
    /// AIPerf's run summaries (`profile_export_aiperf.json` / `.csv`, the server-metrics
    /// export): the `aiperf_version` they carry.
    AiperfReport,
    /// GuideLLM's benchmark report (`benchmarks.json` / `.yaml`): its `guidellm_version`.
    GuidellmReport,
    /// GuideLLM's console output: its loguru lines from `guidellm.…` modules.
    GuidellmConsole,
    /// A saved `/server_info` (or `/get_server_info`) response.
    ServerInfo,
    /// Per-request JSONL records (a client's responses).
    ClientRecords,
}

impl ForeignFormat {
    /// Every format, in the order ties are broken.
    pub const ALL: [ForeignFormat; 21] = [
        ForeignFormat::Vllm,
        ForeignFormat::LlamaCpp,
        ForeignFormat::Tgi,
        ForeignFormat::TensorRtLlm,
        ForeignFormat::Dynamo,
        ForeignFormat::LmDeploy,
        ForeignFormat::Ollama,
        ForeignFormat::LightLlm,
        ForeignFormat::MlcLlm,
        ForeignFormat::Aphrodite,
        ForeignFormat::PrometheusExposition,
        ForeignFormat::NvidiaSmi,
        ForeignFormat::ModelConfig,
        ForeignFormat::AiperfConsole,
        ForeignFormat::BenchServingResult,
        ForeignFormat::AiperfRecords,
        ForeignFormat::AiperfReport,
        ForeignFormat::GuidellmReport,
        ForeignFormat::GuidellmConsole,
        ForeignFormat::ServerInfo,
        ForeignFormat::ClientRecords,
    ];

    /// What the file looks like, as the error says it: `a vLLM log`, `a llama.cpp log`, …
    pub fn description(self) -> &'static str {
        match self {
            ForeignFormat::Vllm => "a vLLM log",
            ForeignFormat::LlamaCpp => "a llama.cpp log",
            ForeignFormat::Tgi => "a text-generation-inference (TGI) log",
            ForeignFormat::TensorRtLlm => "a TensorRT-LLM log",
            ForeignFormat::Dynamo => "an NVIDIA Dynamo log",
            ForeignFormat::LmDeploy => "an LMDeploy log",
            ForeignFormat::Ollama => "an Ollama log",
            ForeignFormat::LightLlm => "a LightLLM log",
            ForeignFormat::MlcLlm => "an MLC-LLM log",
            ForeignFormat::Aphrodite => "an Aphrodite Engine log",
            ForeignFormat::PrometheusExposition => "a Prometheus /metrics dump",
            ForeignFormat::NvidiaSmi => "nvidia-smi output",
            ForeignFormat::ModelConfig => "a Hugging Face model config (config.json)",
            ForeignFormat::AiperfConsole => "NVIDIA AIPerf's console summary",
            ForeignFormat::BenchServingResult => "bench_serving's result file (--output-file)",
            ForeignFormat::AiperfRecords => "AIPerf's per-request export (profile_export.jsonl)",
            ForeignFormat::AiperfReport => "an AIPerf report",
            ForeignFormat::GuidellmReport => "GuideLLM's benchmark report",
            ForeignFormat::GuidellmConsole => "GuideLLM's console output",
            ForeignFormat::ServerInfo => "a saved /server_info response",
            ForeignFormat::ClientRecords => "per-request JSONL records",
        }
    }

    /// Whether `msg` (a record's message) is one of this format's signature lines.
    fn matches(self, msg: &[u8]) -> bool {
        let has = |n: &[u8]| memmem::find(msg, n).is_some();
        let json = msg.trim_ascii_start().starts_with(b"{");
        match self {
            ForeignFormat::Vllm => {
                has(b"Avg prompt throughput:")
                    || has(b"Avg generation throughput:")
                    || has(b"GPU KV cache usage:")
                    || has(b"vllm.entrypoints")
                    || has(b"vLLM API server version")
                    || has(b"(APIServer pid=")
                    || has(b"(EngineCore_")
                    || has(b"(EngineCore pid=")
                    || has(b"(VllmWorker")
                    || vllm_layout(msg)
            }
            ForeignFormat::LlamaCpp => {
                has(b"slot update_slots:")
                    || has(b"slot print_timing:")
                    || has(b"slot launch_slot_:")
                    || has(b"srv  log_server_r:")
                    || has(b"llama_model_loader:")
                    || has(b"llm_load_print_meta:")
                    || has(b"llama_new_context_with_model:")
            }
            ForeignFormat::Tgi => {
                has(b"text_generation_router")
                    || has(b"text_generation_launcher")
                    || has(b"text_generation_server")
            }
            ForeignFormat::TensorRtLlm => has(b"[TRT-LLM]") || has(b"[TensorRT-LLM]"),
            ForeignFormat::Dynamo => has(b"dynamo_runtime::") || has(b"dynamo_llm::"),
            ForeignFormat::LmDeploy => has(b" - lmdeploy - ") || has(b"[TM]["),
            ForeignFormat::Ollama => {
                has(b"[GIN] ")
                    || has(b"llama runner")
                    || (has(b"level=")
                        && (has(b"source=routes.go:")
                            || has(b"source=sched.go:")
                            || has(b"source=server.go:")
                            || has(b"source=images.go:")))
            }
            ForeignFormat::LightLlm => has(b"lightllm"),
            ForeignFormat::MlcLlm => has(b"mlc_llm"),
            // its module paths and its banner, not the word: a document naming the engine
            // (this project's README) is no Aphrodite log
            ForeignFormat::Aphrodite => {
                has(b"aphrodite.")
                    || has(b"aphrodite/")
                    || has(b"Aphrodite Engine")
                    || has(b"aphrodite-engine")
            }
            ForeignFormat::PrometheusExposition => {
                msg.starts_with(b"# HELP ") || msg.starts_with(b"# TYPE ")
            }
            ForeignFormat::NvidiaSmi => {
                has(b"NVIDIA-SMI ")
                    || has(b"==NVSMI LOG==")
                    || msg.starts_with(b"nvidia-smi")
                    || has(b"$ nvidia-smi")
                    || has(b"# nvidia-smi")
                    || has(b"memory.total [MiB]")
                    || has(b"memory.used [MiB]")
            }
            ForeignFormat::ModelConfig => {
                let t = msg.trim_ascii_start();
                t.starts_with(b"\"model_type\":") || t.starts_with(b"\"architectures\":")
            }
            ForeignFormat::AiperfConsole => has(b"NVIDIA AIPerf |"),
            ForeignFormat::BenchServingResult => {
                json && has(b"\"backend\":") && has(b"\"request_rate\":")
            }
            ForeignFormat::AiperfRecords => json && has(b"\"request_start_ns\""),
            ForeignFormat::AiperfReport => {
                has(b"aiperf_version") || msg.starts_with(b"Metric,avg,min,max,sum,p1,")
            }
            ForeignFormat::GuidellmReport => has(b"guidellm_version"),
            ForeignFormat::GuidellmConsole => has(b"|guidellm."),
            ForeignFormat::ServerInfo => {
                let t = msg.trim_ascii_start();
                let key = |k: &[u8]| t.starts_with(k) || (json && has(k));
                (key(b"\"model_path\":") || key(b"\"max_total_num_tokens\":"))
                    && !(json && has(b"\"request_rate\":"))
            }
            ForeignFormat::ClientRecords => {
                json && (has(b"\"completion_tokens\"") || has(b"\"prompt_tokens\""))
            }
        }
    }
}

/// Whether `msg` holds a line in vLLM's logger layout (see the module doc): a level, a
/// `MM-DD HH:MM:SS` date, then `[file.py:N]`.
fn vllm_layout(msg: &[u8]) -> bool {
    const LEVELS: [&[u8]; 5] = [b"DEBUG ", b"INFO ", b"WARNING ", b"ERROR ", b"CRITICAL "];
    LEVELS.iter().any(|level| {
        memmem::find_iter(msg, level).any(|at| {
            let rest = &msg[at + level.len()..];
            // `10-14 17:07:38`
            let date = rest.len() >= 14
                && rest[..14].iter().enumerate().all(|(i, c)| match i {
                    2 => *c == b'-',
                    5 => *c == b' ',
                    8 | 11 => *c == b':',
                    _ => c.is_ascii_digit(),
                });
            if !date {
                return false;
            }
            let mut r = &rest[14..];
            if let Some(f) = r.strip_prefix(b".") {
                r = &f[f.iter().take_while(|c| c.is_ascii_digit()).count()..];
            }
            let Some(tag) = r.strip_prefix(b" [") else {
                return false;
            };
            let end = tag.iter().position(|&c| c == b']').unwrap_or(0);
            memmem::find(&tag[..end], b".py:").is_some()
        })
    })
}

/// Signature lines of one foreign format in one file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignatureCount {
    /// How many lines matched. Unit: lines.
    pub lines: u64,
    /// The first one (1-based line number).
    pub first_line: Option<u64>,
}

/// What a file is, by its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    /// It has SGLang content (server lines or a benchmark summary).
    Sglang,
    /// It has no line at all.
    Empty,
    /// It has no SGLang content and signature lines of another format (the format with the
    /// most of them).
    Foreign {
        /// Which format.
        format: ForeignFormat,
        /// Its signature lines.
        signature: SignatureCount,
    },
    /// Neither SGLang content nor any known format's signature.
    Unrecognised,
}

/// Counts, record by record, what one file looks like (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct FormatSniffer {
    lines: u64,
    sglang: bool,
    counts: [SignatureCount; ForeignFormat::ALL.len()],
}

impl FormatSniffer {
    /// A sniffer that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether SGLang content was seen (then further records change nothing; a caller may stop
    /// feeding them).
    pub fn is_sglang(&self) -> bool {
        self.sglang
    }

    /// Take one record of the file, in order.
    pub fn push(&mut self, rec: &Record<'_>) {
        self.lines += 1;
        if self.sglang {
            return;
        }
        // a bare traceback is any Python program's; a line too long to hold is any file's
        let long = matches!(rec.event, Event::Malformed { reason } if reason == crate::reader::LONG_LINE_REASON);
        if !(long || rec.event.is_free_text() || matches!(rec.event, Event::TracebackStart)) {
            self.sglang = true;
            return;
        }
        let msg = rec.message.trim_ascii_start().as_bytes();
        // a benchmark summary block, or a traceback of an SGLang process
        if crate::bench::is_block_header(rec.message.trim())
            || memmem::find(msg, b"sglang/srt/").is_some()
            || memmem::find(msg, b"sglang.srt").is_some()
        {
            self.sglang = true;
            return;
        }
        for (i, f) in ForeignFormat::ALL.iter().enumerate() {
            if f.matches(msg) {
                let c = &mut self.counts[i];
                c.lines += 1;
                c.first_line.get_or_insert(rec.line_no);
            }
        }
    }

    /// What the records pushed so far make the file: [`LogKind`].
    pub fn classify(&self) -> LogKind {
        if self.sglang {
            return LogKind::Sglang;
        }
        if self.lines == 0 {
            return LogKind::Empty;
        }
        let count = |f: ForeignFormat| {
            ForeignFormat::ALL
                .iter()
                .position(|&x| x == f)
                .map_or(SignatureCount::default(), |i| self.counts[i])
        };
        let best = ForeignFormat::ALL
            .iter()
            .zip(self.counts)
            .filter(|(_, c)| c.lines > 0)
            // the first of equal counts wins (max_by_key keeps the last)
            .rev()
            .max_by_key(|(_, c)| c.lines)
            // vLLM's layout lines are its forks' too: a file that names a fork is the fork's
            .map(|(&f, c)| match f {
                ForeignFormat::Vllm => [ForeignFormat::LightLlm, ForeignFormat::Aphrodite]
                    .into_iter()
                    .find(|&fork| count(fork).lines > 0)
                    .map_or((f, c), |fork| (fork, count(fork))),
                _ => (f, c),
            });
        match best {
            Some((format, signature)) => LogKind::Foreign { format, signature },
            None => LogKind::Unrecognised,
        }
    }

    /// The error for a file named `path` that is not an SGLang log, or `None` when it is one.
    pub fn error(&self, path: &str) -> Option<NotSglangLog> {
        match self.classify() {
            LogKind::Sglang => None,
            LogKind::Unrecognised => Some(NotSglangLog::Unrecognised {
                path: path.to_string(),
                lines: self.lines,
            }),
            LogKind::Empty => Some(NotSglangLog::Empty {
                path: path.to_string(),
            }),
            LogKind::Foreign { format, signature } => Some(NotSglangLog::Foreign {
                path: path.to_string(),
                format,
                signature_lines: signature.lines,
                first_line: signature.first_line.unwrap_or(0),
            }),
        }
    }
}

/// A file given as an SGLang server log that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotSglangLog {
    /// The file has no line at all.
    #[error("{path} is empty; throughput-doctor reads SGLang server logs")]
    Empty {
        /// The file.
        path: String,
    },
    /// The file is not text (NUL bytes, invalid UTF-8 or control bytes at its head) and holds
    /// no SGLang line.
    #[error(
        "{path} does not look like a text log ({why}); throughput-doctor reads SGLang server logs"
    )]
    NotText {
        /// The file.
        path: String,
        /// What its head holds, e.g. `12 NUL bytes in its 4096 bytes`.
        why: String,
    },
    /// The file is a client's progress log (`date-time … N/M done` lines, as `--client-log`
    /// reads them; the caller tells, by reading the file as one).
    #[error(
        "{path} is a client's progress log (date-time ... N/M done lines), not an SGLang server log; pass it as --client-log FILE beside the server log"
    )]
    ClientProgress {
        /// The file.
        path: String,
    },
    /// The file has lines, none of them SGLang's nor another known format's.
    #[error(
        "{path}: none of its {lines} line(s) is an SGLang server line (no batch, start-up or event line) nor another engine's or tool's known output; throughput-doctor reads SGLang server logs"
    )]
    Unrecognised {
        /// The file.
        path: String,
        /// Its lines. Unit: lines.
        lines: u64,
    },
    /// The file has no SGLang line and looks like another format.
    #[error(
        "{path}: this looks like {} ({signature_lines} line(s) in its format, the first at line {first_line}), not an SGLang server log; throughput-doctor reads SGLang server logs",
        format.description()
    )]
    Foreign {
        /// The file.
        path: String,
        /// What it looks like.
        format: ForeignFormat,
        /// Its signature lines. Unit: lines.
        signature_lines: u64,
        /// The first signature line (1-based).
        first_line: u64,
    },
}

impl NotSglangLog {
    /// The foreign format, when the file is one (`None` for an empty file).
    pub fn format(&self) -> Option<ForeignFormat> {
        match self {
            NotSglangLog::Empty { .. }
            | NotSglangLog::NotText { .. }
            | NotSglangLog::ClientProgress { .. }
            | NotSglangLog::Unrecognised { .. } => None,
            NotSglangLog::Foreign { format, .. } => Some(*format),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LogReader;

    fn kind_of(rel: &str) -> LogKind {
        let path = format!("{}/../../tests/data/{rel}", env!("CARGO_MANIFEST_DIR"));
        let mut s = FormatSniffer::new();
        LogReader::open(std::path::Path::new(&path))
            .unwrap()
            .for_each(|r| s.push(r))
            .unwrap();
        s.classify()
    }

    fn foreign(rel: &str) -> (ForeignFormat, u64, u64) {
        match kind_of(rel) {
            LogKind::Foreign { format, signature } => {
                (format, signature.lines, signature.first_line.unwrap())
            }
            k => panic!("{rel}: {k:?}"),
        }
    }

    #[test]
    fn a_llama_cpp_server_log_is_named() {
        let (f, n, first) = foreign("real-2/115-NEGATIVE-llamacpp-pr19408-slot-print-timing.log");
        assert_eq!(f, ForeignFormat::LlamaCpp);
        assert_eq!(first, 1);
        assert!(n >= 3, "{n}");
    }

    #[test]
    fn a_metrics_scrape_is_prometheus_text() {
        let (f, _, first) = foreign("real/040-pr7944-prometheus-metrics-pd.log");
        assert_eq!((f, first), (ForeignFormat::PrometheusExposition, 1));
    }

    #[test]
    fn nvidia_smi_pastes_of_every_form() {
        for rel in [
            "real/nvidia-smi/001-cubecos-i312-rtx-pro-6000-blackwell-q-memory-perf.txt",
            "real/nvidia-smi/002-trtllm-i10278-b200x8-table.txt",
            "real/nvidia-smi/004-club3090-i617-rtx5090-single-with-processes-header.txt",
            "real/nvidia-smi/005-aikitoria-i20-rtx6000d-blackwell-no-leading-ts.txt",
            "real-2/nvidia-smi/101-marimo-pr6822-gb10-csv-na-and-table-header.txt",
        ] {
            assert_eq!(foreign(rel).0, ForeignFormat::NvidiaSmi, "{rel}");
        }
    }

    #[test]
    fn a_vllm_benchmark_summary_is_read_as_a_benchmark() {
        assert_eq!(
            kind_of("real/bench/004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt"),
            LogKind::Sglang
        );
    }

    #[test]
    fn sglang_logs_are_sglang() {
        for rel in [
            "real/049-i3752-watchdog-timeout-tp8-with-top.log",
            "real/062-i11208-gb200-glm45air-dp-startup-kv-capacity.log",
            "real-2/107-amd-2x-r9700-qwen36-35b-awq-oom-at-weight-init-unquant-moe.log",
        ] {
            assert_eq!(kind_of(rel), LogKind::Sglang, "{rel}");
        }
    }

    /// The scenario's `nvidia-smi --query-gpu=… --format=csv` copy, its `config.json` and
    /// AIPerf's console summary (`clients/README.md`) given as the log: each is named.
    #[test]
    fn a_gpu_csv_a_model_config_and_an_aiperf_console_are_named() {
        for (rel, format) in [
            (
                "scenarios/kimi-k25-b2-early/nvidia-smi.csv",
                ForeignFormat::NvidiaSmi,
            ),
            (
                "scenarios/kimi-k25-b2-early/config.json",
                ForeignFormat::ModelConfig,
            ),
            (
                "clients/aiperf-0.13.0/profile_export_console.txt",
                ForeignFormat::AiperfConsole,
            ),
        ] {
            assert!(
                matches!(kind_of(rel), LogKind::Foreign { format: f, .. } if f == format),
                "{rel}: {:?}",
                kind_of(rel)
            );
        }
        // a JSON line that only mentions the key in a value is not a config
        let mut s = FormatSniffer::new();
        LogReader::from_reader("t", &b"{\"msg\": \"model_type: llama\"}\n"[..])
            .for_each(|r| s.push(r))
            .unwrap();
        assert_eq!(s.classify(), LogKind::Unrecognised);
    }

    /// vLLM's stats line and TGI's tracing targets, as they are printed (vLLM issue 19680,
    /// TGI issue 1362): each is named, and one SGLang line among them makes the file SGLang.
    #[test]
    fn vllm_and_tgi_lines() {
        let vllm = "INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, Avg generation throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 reqs, GPU KV cache usage: 57.9%, Prefix cache hit rate: 40.5%\n";
        let tgi = "2023-12-20T14:42:22.580668Z  INFO text_generation_launcher: Args { model_id: \"/data/model/\", revision: None }\n";
        let sniff = |text: &str| {
            let mut s = FormatSniffer::new();
            LogReader::from_reader("t", text.as_bytes())
                .for_each(|r| s.push(r))
                .unwrap();
            s
        };
        let k = sniff(&vllm.repeat(3)).classify();
        assert!(
            matches!(k, LogKind::Foreign { format: ForeignFormat::Vllm, signature } if signature.lines == 3),
            "{k:?}"
        );
        let e = sniff(tgi).error("tgi.log").unwrap();
        assert_eq!(e.format(), Some(ForeignFormat::Tgi));
        assert!(
            e.to_string()
                .starts_with("tgi.log: this looks like a text-generation-inference (TGI) log"),
            "{e}"
        );
        let mixed = format!(
            "{vllm}[2025-04-15 17:25:16 DP0 TP0] Decode batch. #running-req: 92, #token: 264288, token usage: 0.92, gen throughput (token/s): 324.86, #queue-req: 990, \n"
        );
        assert_eq!(sniff(&mixed).classify(), LogKind::Sglang);
        assert_eq!(
            sniff("").error("e.log"),
            Some(NotSglangLog::Empty {
                path: "e.log".into()
            })
        );
        assert_eq!(sniff("hello\nworld\n").classify(), LogKind::Unrecognised);
    }

    fn sniff_text(text: &str) -> LogKind {
        let mut s = FormatSniffer::new();
        LogReader::from_reader("t", text.as_bytes())
            .for_each(|r| s.push(r))
            .unwrap();
        s.classify()
    }

    fn format_of(text: &str) -> Option<ForeignFormat> {
        match sniff_text(text) {
            LogKind::Foreign { format, .. } => Some(format),
            _ => None,
        }
    }

    /// Other engines, from their loggers' own lines as printed in public reports: TensorRT-LLM
    /// (its Python logger's `[TRT-LLM] [I]`), LMDeploy (`%(asctime)s - lmdeploy - LEVEL -`,
    /// TurboMind's `[TM][…]`), Ollama (slog `source=routes.go:`, gin's access lines), Dynamo
    /// (its Rust runtime's targets), vLLM V1 (a process tag before its logger's layout),
    /// LightLLM (vLLM's layout, its own package in the paths).
    #[test]
    fn other_engines_are_named() {
        let cases = [
            (
                "[08/22/2023-09:26:59] [TRT-LLM] [I] TensorRT-LLM (total latency: 3.029069662094116 sec)\n",
                ForeignFormat::TensorRtLlm,
            ),
            (
                "2024-12-30 12:41:32,786 - lmdeploy - INFO - cache_engine.py:36 - build CacheEngine with config:CacheConfig(max_batches=128, block_size=64)\n[TM][WARNING] [forward] Request failed for 0, code 4\n",
                ForeignFormat::LmDeploy,
            ),
            (
                "time=2024-11-30T12:03:38.994+08:00 level=INFO source=routes.go:1248 msg=\"Listening on 127.0.0.1:11434 (version 0.4.6)\"\n[GIN] 2024/11/30 - 12:04:01 | 200 |  1.2s | 127.0.0.1 | POST \"/api/generate\"\n",
                ForeignFormat::Ollama,
            ),
            (
                "[INFO] dynamo_runtime::pipeline::network::manager: TCP request plane server started\n",
                ForeignFormat::Dynamo,
            ),
            (
                "(APIServer pid=1) INFO 10-14 17:07:43 [api_server.py:1885] Starting vLLM API server 0 on http://0.0.0.0:8000\n(EngineCore_0 pid=245) INFO 10-14 17:07:20 [core.py:77] Initializing a V1 LLM engine\n",
                ForeignFormat::Vllm,
            ),
            (
                "INFO 01-22 12:00:00 [manager.py:123] router started\nINFO 01-22 12:00:01 [api_http.py:400] lightllm.server.api_server listening\n",
                ForeignFormat::LightLlm,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(format_of(text), Some(want), "{text}");
        }
        // Aphrodite by its module path; a document that names the engine among others is none
        // (the fresh user gave the README as the log: "an Aphrodite Engine log")
        assert_eq!(
            format_of("INFO:     aphrodite.endpoints.openai.api_server: Started server process\n"),
            Some(ForeignFormat::Aphrodite)
        );
        assert_eq!(
            format_of(
                "another engine's log (vLLM V0/V1, LightLLM, Aphrodite, TensorRT-LLM) is refused\n"
            ),
            None
        );
        // vLLM's layout needs its `[file.py:N]`: a level and a date alone are any logger's
        assert_eq!(format_of("INFO 10-14 17:07:43 starting\n"), None);
        assert!(vllm_layout(b"WARNING 10-14 17:07:43.123 [loggers.py:12] x"));
        assert!(!vllm_layout(
            b"WARNING 2025-10-14 17:07:43 [loggers.py:12] x"
        ));
    }

    /// real-3/042: a vLLM V1 log whose stats lines a terminal wrapped between their two
    /// halves: each half, the process tags and the logger's layout name it.
    #[test]
    fn a_wrapped_vllm_log_is_named() {
        let (f, n, first) = foreign("real-3/042-NEGATIVE-vllm-i27073-foreign-format-wrapped.log");
        assert_eq!((f, first), (ForeignFormat::Vllm, 1));
        assert!(n >= 6, "{n}");
    }

    /// Files the other options take, given as the log (the clients' own files, the scenario's
    /// server info and records): each named, for the flag the error gives.
    #[test]
    fn the_files_other_options_take_are_named() {
        for (rel, want) in [
            (
                "scenarios/kimi-k25-b2-early/server_info.json",
                ForeignFormat::ServerInfo,
            ),
            (
                "scenarios/kimi-k25-b2-early/responses.jsonl",
                ForeignFormat::ClientRecords,
            ),
            (
                "clients/aiperf-0.13.0/profile_export.head20.jsonl",
                ForeignFormat::AiperfRecords,
            ),
            (
                "clients/aiperf-0.13.0/profile_export_aiperf.json",
                ForeignFormat::AiperfReport,
            ),
            (
                "clients/aiperf-0.13.0/profile_export_aiperf.csv",
                ForeignFormat::AiperfReport,
            ),
            (
                "clients/aiperf-0.13.0/server_metrics_export.csv",
                ForeignFormat::AiperfReport,
            ),
            (
                "clients/aiperf-0.13.0/aiperf.console.txt",
                ForeignFormat::AiperfConsole,
            ),
            (
                "clients/guidellm-0.8.1/benchmarks.csv",
                ForeignFormat::GuidellmReport,
            ),
            (
                "clients/guidellm-0.8.1/guidellm.console.txt",
                ForeignFormat::GuidellmConsole,
            ),
        ] {
            assert_eq!(foreign(rel).0, want, "{rel}");
        }
        // bench_serving's and GuideLLM's one-line JSON outputs, longer than a line the reader
        // holds: their first bytes tell
        for (rel, want) in [
            (
                "clients/sglang-bench-serving-0.5.23/bench.jsonl.head4k",
                ForeignFormat::BenchServingResult,
            ),
            (
                "clients/guidellm-0.8.1/benchmarks.json.head4k",
                ForeignFormat::GuidellmReport,
            ),
        ] {
            let path = format!("{}/../../tests/data/{rel}", env!("CARGO_MANIFEST_DIR"));
            let mut text = std::fs::read_to_string(path).unwrap();
            text.push_str(&" ".repeat(crate::reader::MAX_LINE));
            text.push('\n');
            assert_eq!(format_of(&text), Some(want), "{rel}");
        }
    }

    /// A file with no SGLang line and no known format's is refused too; an SGLang process's
    /// traceback is SGLang content.
    #[test]
    fn unrecognised_text_is_refused_and_an_sglang_traceback_is_not() {
        let mut s = FormatSniffer::new();
        LogReader::from_reader("t", "# notes\nstarting the run\n".as_bytes())
            .for_each(|r| s.push(r))
            .unwrap();
        assert_eq!(
            s.error("notes.md"),
            Some(NotSglangLog::Unrecognised {
                path: "notes.md".into(),
                lines: 2
            })
        );
        let tb = "Traceback (most recent call last):\n  File \"/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py\", line 2357, in run_scheduler_process\n";
        assert_eq!(sniff_text(tb), LogKind::Sglang);
    }
}
