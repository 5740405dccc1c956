//! Developer shortcuts: `cargo xtask diagnose ARGS` runs `throughput-doctor diagnose ARGS`
//! (building it first). The xtask finds the workspace root from `CARGO_MANIFEST_DIR`, so it
//! works from any directory.

mod bench_client;
mod bench_parse;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root());
    c
}

fn run(mut c: Command) -> ExitCode {
    match c.status() {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("xtask: could not run {c:?}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo run -p throughput-doctor-cli -- SUBCOMMAND ARGS`, in the dev profile so that it shares
/// its build with `cargo test` (a fresh 2-core machine builds once, not twice). For multi-gigabyte
/// logs install the optimised binary instead: `cargo install --path crates/cli`.
fn doctor(sub: &str, args: &[String]) -> ExitCode {
    let mut c = cargo();
    c.args([
        "run",
        "--quiet",
        "-p",
        "throughput-doctor-cli",
        "--bin",
        "throughput-doctor",
        "--",
        sub,
    ]);
    c.args(args);
    run(c)
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: cargo xtask <task> [args]\n\n\
         tasks:\n  \
           diagnose [ARGS]   build and run `throughput-doctor diagnose ARGS` (no ARGS: the embedded sample)\n  \
           gpu-check         on a GPU host: NVML probe figures beside nvidia-smi's (exit 1 on mismatch)\n  \
           bench-parse [MB]  parse speed vs cat, wc -l, rg -c and the Python baseline on a generated log\n  \
           bench-client [N]  our batch client vs benches/python_client.py against the simulator (req/s, CPU per request)\n  \
           schema            regenerate docs/report.schema.json from the report's types\n"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        return usage();
    };
    match task.as_str() {
        "diagnose" => doctor("diagnose", rest),
        "bench-parse" => bench_parse::run(&root(), rest),
        "bench-client" => bench_client::run(&root(), rest),
        "schema" => {
            let mut c = cargo();
            c.args(["test", "--quiet", "-p", "diagnosis", "--test", "schema"])
                .env("UPDATE_SCHEMA", "1");
            run(c)
        }
        "gpu-check" => doctor(
            "gpu",
            &[vec!["--check".to_string()], rest.to_vec()].concat(),
        ),
        _ => usage(),
    }
}
