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

/// A real log: TP0 of issue 3909 (9 decode lines).
fn log() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real/002-i3909-throughput-steadily-decreases.log")
}

/// The report's inputs (`diagnose --json`): each one name.
fn input_names(out: &Output) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    v["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(|i| i["name"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Item 14: a job directory with three links to `.`, a link to a file of its own and a link
/// to a log out of it. The walk followed the links 8 levels deep and read the one log 9,841
/// times (4.5 GB for a 460 KB log). It is read once; the links are said, not followed.
#[test]
fn links_in_a_job_directory_read_each_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job");
    std::fs::create_dir(&job).unwrap();
    std::fs::copy(log(), job.join("rank0.log")).unwrap();
    for l in ["a", "b", "c"] {
        std::os::unix::fs::symlink(".", job.join(l)).unwrap();
    }
    std::os::unix::fs::symlink("rank0.log", job.join("alias.log")).unwrap();
    let outside = dir.path().join("other.log");
    std::fs::copy(log(), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, job.join("out.log")).unwrap();
    let mut cmd = bin();
    cmd.args(["diagnose", "--json"]).arg(&job);
    let out = run_within(cmd, Duration::from_secs(120)).expect("diagnose ended");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let names = input_names(&out);
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(
        names[0].ends_with("rank0.log") || names[0].ends_with("alias.log"),
        "{names:?}"
    );
    for l in ["a", "b", "c"] {
        let said = format!(
            "skipped {}: a link to a directory, not followed",
            job.join(l).display()
        );
        assert!(err.contains(&said), "{err}");
    }
    let said = format!(
        "skipped {}: a link out of the directory",
        job.join("out.log").display()
    );
    assert!(err.contains(&said), "{err}");
    assert!(err.contains("the same file as"), "{err}");
    // named, the link out is read
    let mut cmd = bin();
    cmd.args(["diagnose", "--json"]).arg(job.join("out.log"));
    let out = run_within(cmd, Duration::from_secs(120)).expect("diagnose ended");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(input_names(&out).len(), 1);
}

/// Item 16: `--watch` over a directory of more logs than the open-file limit allows
/// descriptors (300 under `ulimit -n 128`). Each followed log held its file open: the logs
/// past the limit were never read, a "Too many open files" note each, every period, and the
/// exit was 0. Descriptors are bounded: every log is read, and a log past the open window
/// (reopened at its offset on each poll) gets the lines appended to it, each once.
#[test]
fn watch_over_more_logs_than_descriptors_reads_them_all() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job");
    std::fs::create_dir(&job).unwrap();
    let text = std::fs::read_to_string(log()).unwrap();
    let files = 300;
    for k in 0..files {
        // a DP rank each: one server of 300 schedulers
        let lines = text.replace(" TP0]", &format!(" DP{k} TP0]"));
        std::fs::write(job.join(format!("rank{k:03}.log")), lines).unwrap();
    }
    let last = job.join(format!("rank{:03}.log", files - 1));
    let last_name = last.display().to_string();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 128 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_throughput-doctor"))
        .args(["diagnose", "--watch", "1s", "--watch-count", "2"])
        .arg(&job)
        .env("NO_COLOR", "1")
        .env_remove("SGLANG_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut reports: Vec<Vec<String>> = Vec::new();
    for line in stdout.lines() {
        let line = line.unwrap();
        if line.starts_with("── report") {
            reports.push(Vec::new());
        } else if let Some(r) = reports.last_mut() {
            let appended = line.starts_with(&format!("  {last_name}:"));
            r.push(line);
            if appended && reports.len() == 1 {
                // after the first read of the last log: two more decode lines
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&last)
                    .unwrap();
                f.write_all(
                    b"[2025-02-27 04:47:20 DP299 TP0] Decode batch. #running-req: 8, #token: 65000, token usage: 0.13, gen throughput (token/s): 186.10, #queue-req: 0\n\
                      [2025-02-27 04:47:22 DP299 TP0] Decode batch. #running-req: 8, #token: 65320, token usage: 0.13, gen throughput (token/s): 186.20, #queue-req: 0\n",
                )
                .unwrap();
            }
        }
    }
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(reports.len(), 2, "{err}");
    for (k, r) in reports.iter().enumerate() {
        let all = r.join("\n");
        assert!(!all.contains("Too many open files"), "report {k}: {all}");
        let read = r
            .iter()
            .filter(|l| l.starts_with(&format!("  {}", job.display())) && l.contains(" decode"))
            .count();
        assert_eq!(read, files, "report {k}: {all}");
        let of_last: Vec<&String> = r
            .iter()
            .filter(|l| l.starts_with(&format!("  {last_name}:")))
            .collect();
        let want = if k == 0 { " 9 decode" } else { " 11 decode" };
        assert!(
            of_last.len() == 1 && of_last[0].contains(want),
            "report {k}: {of_last:?}"
        );
    }
}
