//! Developer shortcuts: `cargo xtask diagnose ARGS` runs `throughput-doctor diagnose ARGS`
//! (building it first, with cargo's progress shown), `cargo xtask man [DIR]` writes the man
//! pages generated from the clap definition. The xtask finds the workspace root from `CARGO_MANIFEST_DIR`, so it
//! works from any directory.

mod bench_client;
mod bench_parse;
mod instructions;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

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

/// The `"executable"` of the `throughput-doctor` artifact in cargo's JSON messages.
fn executable_in(messages: &str) -> Option<PathBuf> {
    const KEY: &str = "\"executable\":\"";
    messages
        .lines()
        .filter(|l| l.contains("\"compiler-artifact\"") && l.contains("throughput-doctor"))
        .find_map(|l| {
            let start = l.find(KEY)? + KEY.len();
            let mut path = String::new();
            let mut chars = l[start..].chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => return Some(PathBuf::from(path)),
                    '\\' => path.push(chars.next()?),
                    c => path.push(c),
                }
            }
            None
        })
}

/// Build `throughput-doctor` in the dev profile (so that it shares its build with `cargo test`:
/// a fresh 2-core machine builds once, not twice), with cargo's progress on stderr (a first
/// build takes minutes and must not look hung), then run `throughput-doctor SUBCOMMAND ARGS`.
/// For multi-gigabyte logs install the optimised binary instead: `cargo install --path
/// crates/cli`.
fn doctor(sub: &str, args: &[String]) -> ExitCode {
    let mut b = cargo();
    b.args([
        "build",
        "-p",
        "throughput-doctor-cli",
        "--bin",
        "throughput-doctor",
        "--message-format=json-render-diagnostics",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    let out = match b.output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("xtask: could not run cargo build: {e}");
            return ExitCode::FAILURE;
        }
    };
    if !out.status.success() {
        return ExitCode::from(out.status.code().unwrap_or(1).clamp(1, 255) as u8);
    }
    let Some(exe) = executable_in(&String::from_utf8_lossy(&out.stdout)) else {
        eprintln!("xtask: cargo build did not say where throughput-doctor is");
        return ExitCode::FAILURE;
    };
    let mut c = Command::new(exe);
    c.arg(sub).args(args);
    run(c)
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: cargo xtask <task> [args]\n\n\
         tasks:\n  \
           diagnose [ARGS]   build and run `throughput-doctor diagnose ARGS` (no ARGS: the embedded sample)\n  \
           gpu-check         on a GPU host: NVML probe figures beside nvidia-smi's (exit 1 on mismatch)\n  \
           man [DIR]         write the man pages (throughput-doctor.1 and one per subcommand) into DIR (default target/man)\n  \
           bench-parse [MB]  parse speed vs cat, wc -l, rg -c and the Python baseline on a generated log\n  \
           instructions [B]  instructions a line (callgrind) of the full parse and of diagnose on the first B bytes (default 20,000,000) of the seed-7 log\n  \
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
        "man" => {
            let dir = rest
                .first()
                .map(PathBuf::from)
                .unwrap_or_else(|| root().join("target/man"));
            doctor("man", &[dir.display().to_string()])
        }
        "bench-parse" => bench_parse::run(&root(), rest),
        "bench-client" => bench_client::run(&root(), rest),
        "instructions" => instructions::run(&root(), rest),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_executable_is_found_in_cargo_messages() {
        let msgs = concat!(
            r#"{"reason":"compiler-artifact","target":{"name":"diagnosis"},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/crates/cli#throughput-doctor-cli@0.1.0","target":{"name":"throughput-doctor"},"executable":"/w/target/debug/throughput-doctor","fresh":true}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(
            executable_in(msgs),
            Some(PathBuf::from("/w/target/debug/throughput-doctor"))
        );
        assert_eq!(executable_in(r#"{"reason":"build-finished"}"#), None);
    }
}
