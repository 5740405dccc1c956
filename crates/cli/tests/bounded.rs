//! Issue 30 (hardening, round 3), section C "No quadratic or unbounded path": the binary under
//! inputs that made it wait forever, read a file thousands of times or hold a descriptor per
//! file. Each test performs the attack at a small size and asserts on what was done (reads,
//! descriptors), with a generous deadline only where the attack is a hang.

#![cfg(unix)]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_throughput-doctor"));
    c.env_remove("SGLANG_API_KEY").env("NO_COLOR", "1");
    c
}

/// Runs `cmd` to its end, or kills it after `limit` (then `None`).
fn run_within(mut cmd: Command, limit: Duration) -> Option<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().expect("wait").is_some() {
            return Some(child.wait_with_output().expect("output"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Makes a FIFO at `path`; false where `mkfifo` is missing.
fn mkfifo(path: &Path) -> bool {
    Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

/// Item 15: a FIFO named as the log, whose writer sends lines of no SGLang kind and goes. The
/// log was opened a second time to look for a client's progress lines, and that open waited
/// for a writer that never came (forever). The FIFO is read once: the refusal comes, and a
/// client's progress log through a FIFO is still named as one.
#[test]
fn a_fifo_with_no_sglang_line_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, want) in [
        (
            "notes.log",
            "hello\nnothing of a server here\n",
            "none of its 2 line(s) is an SGLang server line",
        ),
        (
            "client.log",
            "2026-02-10 15:59:36 [x] 3/10 done, 0.1 req/s\n2026-02-10 15:59:46 [x] 4/10 done, 0.1 req/s\n",
            "--client-log",
        ),
    ] {
        let fifo = dir.path().join(name);
        if !mkfifo(&fifo) {
            eprintln!("no mkfifo here: skipped");
            return;
        }
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                // blocks until the binary opens it for reading
                let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
                f.write_all(text.as_bytes()).unwrap();
            })
        };
        let mut cmd = bin();
        cmd.arg("diagnose").arg(&fifo);
        let out = run_within(cmd, Duration::from_secs(60));
        writer.join().unwrap();
        let out = out.unwrap_or_else(|| panic!("diagnose of the FIFO {name} did not end"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(want), "{name}: {err}");
    }
}
