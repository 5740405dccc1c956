//! `cargo xtask instructions [BYTES]`: the parse-speed figure of record (issue 31), instructions
//! per line counted by valgrind's callgrind, which are the same on every run of the same build
//! (wall time on a shared VM moves by 1.5x within an hour).
//!
//! Takes the first BYTES bytes (default 20,000,000) of the 512 MiB seed-7 log that `cargo xtask
//! bench-parse` generates (generated here too when missing), builds the release `aggregate`
//! example of `sglang-log` (the full parse: every field of every line) and `throughput-doctor`,
//! runs each once under callgrind, and prints the instructions, the lines and their ratio for
//! the full parse and for `throughput-doctor diagnose` (the whole pipeline, its worker threads
//! included). Needs `valgrind`; exits 1 with the reason when it is missing.

use crate::bench_parse::{build, have, seed7_log};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

/// The default sample: the first 20,000,000 bytes of the seed-7 log (bytes).
const SAMPLE_BYTES: u64 = 20_000_000;

/// The instruction count callgrind reports on stderr (`==PID== Collected : N`).
fn collected(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|l| {
        let rest = l.split_once("Collected :")?.1;
        rest.trim().replace(',', "").parse().ok()
    })
}

/// Instructions `cmd` executes, all its threads together; `None` (the reason on stderr) when
/// it cannot be measured.
fn instructions(cmd: &[&str]) -> Option<u64> {
    let out_file = std::env::temp_dir().join(format!("xtask-callgrind-{}.out", std::process::id()));
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .args(cmd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let _ = std::fs::remove_file(&out_file);
    match out {
        Ok(o) if o.status.success() => {
            let err = String::from_utf8_lossy(&o.stderr);
            let n = collected(&err);
            if n.is_none() {
                eprintln!("instructions: no `Collected :` line from callgrind for {cmd:?}");
            }
            n
        }
        Ok(o) => {
            eprintln!(
                "instructions: {cmd:?} under callgrind exited with {}:\n{}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("instructions: cannot run valgrind: {e}");
            None
        }
    }
}

/// The first `bytes` bytes of `log` written to `sample` (once), and the sample's lines (a cut
/// last line counts as a line, as the reader delivers it).
fn cut_sample(log: &Path, sample: &Path, bytes: u64) -> std::io::Result<u64> {
    if std::fs::metadata(sample).map(|m| m.len()).ok() != Some(bytes) {
        let mut head = Vec::new();
        std::fs::File::open(log)?
            .take(bytes)
            .read_to_end(&mut head)?;
        std::fs::File::create(sample)?.write_all(&head)?;
    }
    let mut lines = 0u64;
    let mut r = BufReader::new(std::fs::File::open(sample)?);
    let mut buf = Vec::new();
    while r.read_until(b'\n', &mut buf)? > 0 {
        lines += 1;
        buf.clear();
    }
    Ok(lines)
}

pub fn run(root: &Path, args: &[String]) -> ExitCode {
    let bytes = match args.first().map(|s| s.replace('_', "").parse::<u64>()) {
        None => SAMPLE_BYTES,
        Some(Ok(b)) if b > 0 => b,
        _ => {
            eprintln!("usage: cargo xtask instructions [BYTES]   (default {SAMPLE_BYTES})");
            return ExitCode::from(2);
        }
    };
    if !have("valgrind") {
        eprintln!(
            "instructions: valgrind is needed (Debian: apt-get install valgrind); the figure of record is callgrind's instruction count"
        );
        return ExitCode::FAILURE;
    }
    if !have("python3") {
        eprintln!("instructions: python3 is needed to generate the log (tools/gen_sglang_log.py)");
        return ExitCode::FAILURE;
    }
    let Some(target) = build(root, &["-p", "sglang-log", "--example", "aggregate"]) else {
        return ExitCode::FAILURE;
    };
    if build(
        root,
        &["-p", "throughput-doctor-cli", "--bin", "throughput-doctor"],
    )
    .is_none()
    {
        return ExitCode::FAILURE;
    }
    let Some(log) = seed7_log(&target, root, 512.0) else {
        return ExitCode::FAILURE;
    };
    let sample = target
        .join("bench-parse")
        .join(format!("seed7-head-{bytes}.log"));
    let lines = match cut_sample(&log, &sample, bytes) {
        Ok(n) if n > 0 => n,
        Ok(_) => {
            eprintln!("instructions: the sample {} is empty", sample.display());
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("instructions: cannot cut {}: {e}", sample.display());
            return ExitCode::FAILURE;
        }
    };
    let s = sample.to_string_lossy().to_string();
    let aggregate = target.join("release/examples/aggregate");
    let doctor = target.join("release/throughput-doctor");
    println!(
        "instructions: {} ({bytes} bytes, {lines} lines), callgrind, one run each",
        sample.display()
    );
    let mut ok = true;
    for (what, cmd) in [
        (
            "full parse (aggregate)",
            vec![aggregate.to_string_lossy().to_string(), s.clone()],
        ),
        (
            "diagnose",
            vec![
                doctor.to_string_lossy().to_string(),
                "diagnose".to_string(),
                s.clone(),
            ],
        ),
    ] {
        let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
        match instructions(&argv) {
            Some(n) => println!(
                "  {what:<24} {n:>13} instructions  {:>7.0} a line",
                n as f64 / lines as f64
            ),
            None => ok = false,
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_callgrinds_count() {
        let err = "==9620== Events    : Ir\n==9620== Collected : 262936739\n==9620==\n==9620== I   refs:      262,936,739\n";
        assert_eq!(collected(err), Some(262_936_739));
        assert_eq!(collected("==1== I refs: 5\n"), None);
    }
}
