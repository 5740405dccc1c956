//! A case folder: a directory given as the log that holds, beside the server's logs, the other
//! files a user has (the client's progress log, an `nvidia-smi` copy, the model's `config.json`,
//! a saved `/server_info`, per-request records). Each file is given its role by its content,
//! not its name, and used as the flag of that role would use it; a flag given on the command
//! line wins over a file found here.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::DiagnoseArgs;

/// Bytes of a file's head read to recognise it.
const HEAD_BYTES: u64 = 64 << 10;
/// A JSON file larger than this is no `config.json` or `/server_info` answer (bytes).
const MAX_JSON_BYTES: u64 = 4 << 20;
/// A benchmark client's whole-document file (GuideLLM's report, AIPerf's summary,
/// bench_serving's one-line result with its per-request arrays) is read whole up to this size
/// to be recognised (bytes).
const MAX_CLIENT_DOC_BYTES: u64 = 64 << 20;

/// The role of a benchmark client's whole-document file (a JSON or YAML report, a summary CSV,
/// console tables) from all of its text: per-request records go to `--client-records`, a run
/// summary alone to `--client-log`; `None` when it is neither (or is refused by its reader).
fn client_document_role(path: &Path) -> Option<Role> {
    let text = std::fs::metadata(path)
        .ok()
        .filter(|m| m.len() <= MAX_CLIENT_DOC_BYTES)
        .and_then(|_| std::fs::read(path).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())?;
    let c = sglang_log::parse_client(path.display().to_string(), &text);
    if !c.requests.is_empty() {
        return Some(Role::ClientRecords);
    }
    // a run summary, from JSON or a file that holds no SGLang batch line (a server log with a
    // benchmark's block in it stays a log; a JSON result's generated texts may say anything)
    let json = text.trim_start().starts_with('{');
    (!c.bench.is_empty() && (json || !text.contains(" batch"))).then_some(Role::ClientLog)
}

/// What a file in a case folder is, by its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A client's progress log (`date-time ... N/M done`): `--client-log`.
    ClientLog,
    /// Per-request JSONL records: `--client-records`.
    ClientRecords,
    /// A copied `nvidia-smi` output: `--gpu-snapshot`.
    GpuSnapshot,
    /// A Hugging Face `config.json`: `--model-config`.
    ModelConfig,
    /// A saved `/server_info` or `/get_server_info` answer: `--server-info`.
    ServerInfo,
}

impl Role {
    /// The flag the role stands for.
    pub fn flag(self) -> &'static str {
        match self {
            Role::ClientLog => "--client-log",
            Role::ClientRecords => "--client-records",
            Role::GpuSnapshot => "--gpu-snapshot",
            Role::ModelConfig => "--model-config",
            Role::ServerInfo => "--server-info",
        }
    }

    fn slot(self, args: &mut DiagnoseArgs) -> &mut Option<PathBuf> {
        match self {
            Role::ClientLog => &mut args.client_log,
            Role::ClientRecords => &mut args.client_records,
            Role::GpuSnapshot => &mut args.gpu_snapshot,
            Role::ModelConfig => &mut args.model_config,
            Role::ServerInfo => &mut args.server_info,
        }
    }
}

fn head(path: &Path) -> Option<String> {
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(HEAD_BYTES).read_to_end(&mut buf))
        .ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The role of one file, from its content; `None` for a server log or anything else.
pub fn role_of(path: &Path) -> Option<Role> {
    let text = head(path)?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        // one JSON object: a model config or a server-info answer; else JSONL records
        let whole = std::fs::metadata(path)
            .ok()
            .filter(|m| m.len() <= MAX_JSON_BYTES)
            .and_then(|_| std::fs::read_to_string(path).ok())
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok());
        if let Some(obj) = whole.as_ref().and_then(serde_json::Value::as_object) {
            let has = |k: &str| obj.contains_key(k);
            if has("max_total_num_tokens") || has("internal_states") || has("mem_fraction_static") {
                return Some(Role::ServerInfo);
            }
            if has("architectures") || has("model_type") || has("hidden_size") {
                return Some(Role::ModelConfig);
            }
            return client_document_role(path);
        }
        // one JSON document too large for the head, or JSONL records
        if let Some(role) = client_document_role(path) {
            return Some(role);
        }
        let first = trimmed.lines().next().unwrap_or("");
        return serde_json::from_str::<serde_json::Value>(first)
            .ok()
            .filter(serde_json::Value::is_object)
            .map(|_| Role::ClientRecords);
    }
    if gpu_probe::parse_nvidia_smi(&text, &path.display().to_string())
        .is_ok_and(|s| !s.devices.is_empty())
    {
        return Some(Role::GpuSnapshot);
    }
    let client = sglang_log::parse_client(path.display().to_string(), &text);
    // a client's progress log holds progress lines and no SGLang batch line
    if client.progress.len() >= 2 && !text.contains(" batch") {
        return Some(Role::ClientLog);
    }
    // a server log (an SGLang line in its head) is not read whole again to be ruled out
    let server_line = text.lines().any(|l| {
        let e = sglang_log::parse_line(l.as_bytes(), 1).event;
        !e.is_free_text() && !matches!(e, sglang_log::Event::Malformed { .. })
    });
    if server_line {
        return None;
    }
    // a benchmark client's report (GuideLLM's YAML), summary CSV or console tables
    client_document_role(path)
}

/// Give each file of every directory among `args.logs` its role: the files of a role whose
/// flag is not set fill it, and leave the directory's log list (the directory is then replaced
/// by its remaining log files). Returns one line per directory that had such files, naming
/// each file's role, and one per file left unused.
///
/// # Errors
/// A directory whose logs cannot be listed ([`crate::logfile::expand_log_dirs`]).
pub fn assign_roles(args: &mut DiagnoseArgs) -> anyhow::Result<Vec<String>> {
    let mut notes = Vec::new();
    let mut logs = Vec::new();
    for p in std::mem::take(&mut args.logs) {
        if p.as_os_str() == "-" || !p.is_dir() {
            logs.push(p);
            continue;
        }
        // a link out of the directory is not followed (as `expand_log_dirs` does not)
        let root = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
        let mut files: Vec<PathBuf> = std::fs::read_dir(&p)
            .map_err(|e| anyhow::anyhow!("cannot read the directory {}: {e}", p.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| {
                f.file_name()
                    .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
                    && std::fs::metadata(f).is_ok_and(|m| m.is_file())
                    && std::fs::canonicalize(f).is_ok_and(|t| t.starts_with(&root))
            })
            .collect();
        files.sort();
        let mut given = Vec::new();
        let mut unused = Vec::new();
        let mut taken: Vec<PathBuf> = Vec::new();
        for f in &files {
            let Some(role) = role_of(f) else { continue };
            let slot = role.slot(args);
            if slot.is_none() {
                *slot = Some(f.clone());
                given.push(format!("{} as {}", f.display(), role.flag()));
            } else {
                unused.push(format!("{} (another {} is used)", f.display(), role.flag()));
            }
            taken.push(f.clone());
        }
        if taken.is_empty() {
            logs.push(p);
            continue;
        }
        let mut skipped = Vec::new();
        let rest: Vec<PathBuf> =
            crate::logfile::expand_log_dirs(std::slice::from_ref(&p), &mut skipped)?
                .into_iter()
                .filter(|f| !taken.contains(f))
                .collect();
        if rest.is_empty() {
            anyhow::bail!(
                "{} holds no server log beside its {} (a server log is a *.log*, *.out, *.err or *.txt file with SGLang's lines)",
                p.display(),
                given.join(", ")
            );
        }
        let servers: Vec<String> = rest.iter().map(|f| f.display().to_string()).collect();
        notes.push(format!(
            "{}: read {} as the server log, {}",
            p.display(),
            servers.join(", "),
            given.join(", ")
        ));
        for u in unused {
            notes.push(format!("{}: not used: {u}", p.display()));
        }
        notes.extend(skipped);
        logs.extend(rest);
    }
    args.logs = logs;
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(file: &str) -> PathBuf {
        PathBuf::from(format!(
            "{}/../../tests/data/scenarios/kimi-k25-b2-early/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
    }

    #[test]
    fn each_file_of_the_founding_case_by_its_content() {
        for (file, role) in [
            ("client.log", Some(Role::ClientLog)),
            ("responses.jsonl", Some(Role::ClientRecords)),
            ("nvidia-smi.csv", Some(Role::GpuSnapshot)),
            ("config.json", Some(Role::ModelConfig)),
            ("server_info.json", Some(Role::ServerInfo)),
            ("server.log", None),
        ] {
            assert_eq!(role_of(&scenario(file)), role, "{file}");
        }
    }

    #[test]
    fn names_do_not_decide() {
        // the client's progress log under a server-like name, a config under another name
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::copy(scenario("client.log"), dir.path().join("job.out")).expect("copy");
        std::fs::copy(scenario("config.json"), dir.path().join("model.txt")).expect("copy");
        std::fs::copy(scenario("server.log"), dir.path().join("node0.log")).expect("copy");
        let mut args = DiagnoseArgs {
            logs: vec![dir.path().to_path_buf()],
            ..DiagnoseArgs::default()
        };
        let notes = assign_roles(&mut args).expect("roles");
        assert_eq!(args.client_log, Some(dir.path().join("job.out")));
        assert_eq!(args.model_config, Some(dir.path().join("model.txt")));
        assert_eq!(args.logs, vec![dir.path().join("node0.log")]);
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn a_flag_on_the_command_line_wins() {
        let dir = tempfile::tempdir().expect("tmp");
        for f in ["server.log", "client.log", "nvidia-smi.csv"] {
            std::fs::copy(scenario(f), dir.path().join(f)).expect("copy");
        }
        let mut args = DiagnoseArgs {
            logs: vec![dir.path().to_path_buf()],
            gpu_snapshot: Some(PathBuf::from("mine.csv")),
            ..DiagnoseArgs::default()
        };
        let notes = assign_roles(&mut args).expect("roles");
        assert_eq!(args.gpu_snapshot, Some(PathBuf::from("mine.csv")));
        assert_eq!(args.client_log, Some(dir.path().join("client.log")));
        assert!(notes.iter().any(|n| n.contains("not used")), "{notes:?}");
    }

    /// A link to a file out of the folder is not followed (as a job directory's walk does
    /// not): the config it leads to gets no role; a link inside the folder is its file.
    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_folder_gets_no_role() {
        let dir = tempfile::tempdir().expect("tmp");
        let case = dir.path().join("case");
        std::fs::create_dir(&case).expect("mkdir");
        std::fs::copy(scenario("server.log"), case.join("server.log")).expect("copy");
        std::fs::copy(scenario("client.log"), case.join("client.txt")).expect("copy");
        std::os::unix::fs::symlink("client.txt", case.join("progress.txt")).expect("link");
        std::os::unix::fs::symlink(scenario("config.json"), case.join("config.json"))
            .expect("link");
        let mut args = DiagnoseArgs {
            logs: vec![case.clone()],
            ..DiagnoseArgs::default()
        };
        assign_roles(&mut args).expect("roles");
        assert_eq!(args.model_config, None);
        assert_eq!(args.client_log, Some(case.join("client.txt")));
    }

    #[test]
    fn a_folder_of_logs_only_is_left_as_it_is() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::copy(scenario("server.log"), dir.path().join("server.log")).expect("copy");
        let mut args = DiagnoseArgs {
            logs: vec![dir.path().to_path_buf()],
            ..DiagnoseArgs::default()
        };
        assert!(assign_roles(&mut args).expect("roles").is_empty());
        assert_eq!(args.logs, vec![dir.path().to_path_buf()]);
    }

    /// The benchmark clients' own files (`tests/data/clients/`) take their roles by content:
    /// per-request records (AIPerf's export, GuideLLM's report as JSON or YAML) go to
    /// `--client-records`, a run summary alone (AIPerf's summary JSON, GuideLLM's CSV and
    /// console, vLLM's `--save-result`, an llm-d report) to `--client-log`; the server log
    /// beside them stays the log (issue 32: a job directory of AIPerf's artifacts used only
    /// its per-request file).
    #[test]
    fn benchmark_clients_files_take_their_roles() {
        let data = |rel: &str| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/data/clients")
                .join(rel)
        };
        for (rel, role) in [
            (
                "aiperf-0.13.0/profile_export.head20.jsonl",
                Some(Role::ClientRecords),
            ),
            (
                "aiperf-0.13.0/profile_export_aiperf.json",
                Some(Role::ClientLog),
            ),
            (
                "aiperf-0.13.0/profile_export_aiperf.csv",
                Some(Role::ClientLog),
            ),
            (
                "aiperf-0.13.0/profile_export_console.txt",
                Some(Role::ClientLog),
            ),
            (
                "guidellm-0.8.1/benchmarks.trimmed.json",
                Some(Role::ClientRecords),
            ),
            (
                "guidellm-0.8.1/benchmarks.trimmed.yaml",
                Some(Role::ClientRecords),
            ),
            ("guidellm-0.8.1/benchmarks.csv", Some(Role::ClientLog)),
            ("guidellm-0.8.1/guidellm.console.txt", Some(Role::ClientLog)),
            ("guidellm-0.8.1/server.log", None),
            ("vllm-bench-serve/result.json", Some(Role::ClientLog)),
            (
                "llmd-report-0.2/benchmark_report.json",
                Some(Role::ClientLog),
            ),
        ] {
            assert_eq!(role_of(&data(rel)), role, "{rel}");
        }
    }
}
