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
//!   (`metrics.py`, later `[loggers.py:N] Engine 000: …`), `vllm.entrypoints` module paths and
//!   the `vLLM API server version` banner;
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
    /// A Prometheus text exposition (a saved `/metrics` response).
    PrometheusExposition,
    /// `nvidia-smi` output (table, `-q` or CSV query).
    NvidiaSmi,
    /// A Hugging Face model config (`config.json`).
    ModelConfig,
    /// NVIDIA AIPerf's console summary.
    AiperfConsole,
}

impl ForeignFormat {
    /// Every format, in the order ties are broken.
    pub const ALL: [ForeignFormat; 7] = [
        ForeignFormat::Vllm,
        ForeignFormat::LlamaCpp,
        ForeignFormat::Tgi,
        ForeignFormat::PrometheusExposition,
        ForeignFormat::NvidiaSmi,
        ForeignFormat::ModelConfig,
        ForeignFormat::AiperfConsole,
    ];

    /// What the file looks like, as the error says it: `a vLLM log`, `a llama.cpp log`, …
    pub fn description(self) -> &'static str {
        match self {
            ForeignFormat::Vllm => "a vLLM log",
            ForeignFormat::LlamaCpp => "a llama.cpp log",
            ForeignFormat::Tgi => "a text-generation-inference (TGI) log",
            ForeignFormat::PrometheusExposition => "a Prometheus /metrics dump",
            ForeignFormat::NvidiaSmi => "nvidia-smi output",
            ForeignFormat::ModelConfig => "a Hugging Face model config (config.json)",
            ForeignFormat::AiperfConsole => "NVIDIA AIPerf's console summary",
        }
    }

    /// Whether `msg` (a record's message) is one of this format's signature lines.
    fn matches(self, msg: &[u8]) -> bool {
        let has = |n: &[u8]| memmem::find(msg, n).is_some();
        match self {
            ForeignFormat::Vllm => {
                (has(b"Avg prompt throughput:") && has(b"Avg generation throughput:"))
                    || has(b"vllm.entrypoints")
                    || has(b"vLLM API server version")
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
        }
    }
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
        // a bare traceback is any Python program's
        if !matches!(rec.event, Event::Other | Event::TracebackStart) {
            self.sglang = true;
            return;
        }
        let msg = rec.message.trim_ascii_start().as_bytes();
        if crate::bench::is_block_header(rec.message.trim()) {
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
        let best = ForeignFormat::ALL
            .iter()
            .zip(self.counts)
            .filter(|(_, c)| c.lines > 0)
            // the first of equal counts wins (max_by_key keeps the last)
            .rev()
            .max_by_key(|(_, c)| c.lines);
        match best {
            Some((&format, signature)) => LogKind::Foreign { format, signature },
            None => LogKind::Unrecognised,
        }
    }

    /// The error for a file named `path` that is not an SGLang log, or `None` when it is one
    /// (or is unrecognised text, which the diagnosis reports as holding no SGLang lines).
    pub fn error(&self, path: &str) -> Option<NotSglangLog> {
        match self.classify() {
            LogKind::Sglang | LogKind::Unrecognised => None,
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
            NotSglangLog::Empty { .. } => None,
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
}
