//! `cargo xtask bench-parse [SIZE_MB]`: generates a SIZE_MB MiB SGLang log with
//! `tools/gen_sglang_log.py` (default 512, cached under `target/bench-parse/`), then times on it,
//! side by side: `cat`, `wc -l`, `rg -c 'Decode batch'`, our full parse + aggregate (the
//! `sglang-log` `aggregate` example: every field of every line; once on one thread, once with
//! `--threads 2`, `sglang_log::parallel`), `throughput-doctor diagnose`
//! (the whole pipeline), and the hand-written Python regex parser
//! (`tools/baseline_regex_parse.py`). Each tool runs `BENCH_RUNS` times (default 3); the best
//! wall time counts. Prints each time, MB/s, and the ratios against `rg -c` and Python.
//! Tools that are missing (`rg`, `python3`) are skipped with a note.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Best wall time of `runs` runs of `cmd` (stdout discarded); `None` if it fails.
fn time(cmd: &[&str], runs: usize) -> Option<Duration> {
    let mut best: Option<Duration> = None;
    for _ in 0..runs {
        let t0 = Instant::now();
        let st = Command::new(cmd[0])
            .args(&cmd[1..])
            .stdout(Stdio::null())
            .status();
        let dt = t0.elapsed();
        match st {
            Ok(s) if s.success() || (cmd[0] == "rg" && s.code() == Some(1)) => {}
            Ok(s) => {
                eprintln!("bench-parse: {cmd:?} exited with {s}");
                return None;
            }
            Err(e) => {
                eprintln!("bench-parse: cannot run {cmd:?}: {e}");
                return None;
            }
        }
        best = Some(best.map_or(dt, |b| b.min(dt)));
    }
    best
}

/// Runs `cargo build --release` for the given args (the target dir is cargo's own choice:
/// `CARGO_TARGET_DIR` or `target/`); returns the target dir.
fn build(root: &Path, args: &[&str]) -> Option<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let ok = Command::new(&cargo)
        .current_dir(root)
        .args(["build", "--quiet", "--release"])
        .args(args)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("bench-parse: cargo build {args:?} failed");
        return None;
    }
    Some(
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map(|p| if p.is_absolute() { p } else { root.join(p) })
            .unwrap_or_else(|| root.join("target")),
    )
}

pub fn run(root: &Path, args: &[String]) -> ExitCode {
    let size_mb: f64 = match args.first().map(|s| s.parse()) {
        None => 512.0,
        Some(Ok(v)) if v > 0.0 => v,
        _ => {
            eprintln!("usage: cargo xtask bench-parse [SIZE_MB]");
            return ExitCode::from(2);
        }
    };
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    if !have("python3") {
        eprintln!("bench-parse: python3 is needed to generate the log (tools/gen_sglang_log.py)");
        return ExitCode::FAILURE;
    }
    let Some(target) = build(root, &["-p", "sglang-log", "--example", "aggregate"]) else {
        return ExitCode::FAILURE;
    };
    let doctor = build(
        root,
        &["-p", "throughput-doctor-cli", "--bin", "throughput-doctor"],
    )
    .is_some();
    let dir = target.join("bench-parse");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("bench-parse: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let log = dir.join(format!("gen-{size_mb}MiB-seed7.log"));
    if !log.exists() {
        eprintln!("bench-parse: generating {} …", log.display());
        let gen_ok = Command::new("python3")
            .arg(root.join("tools/gen_sglang_log.py"))
            .arg(&log)
            .arg(size_mb.to_string())
            .args(["--seed", "7"])
            .status()
            .is_ok_and(|s| s.success());
        if !gen_ok {
            let _ = std::fs::remove_file(&log);
            eprintln!("bench-parse: the generator failed");
            return ExitCode::FAILURE;
        }
    }
    let bytes = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    let l = log.to_string_lossy().to_string();
    let aggregate = target
        .join("release/examples/aggregate")
        .to_string_lossy()
        .to_string();
    let doctor_bin = target
        .join("release/throughput-doctor")
        .to_string_lossy()
        .to_string();
    let baseline = root
        .join("tools/baseline_regex_parse.py")
        .to_string_lossy()
        .to_string();
    // warm the page cache once so every tool reads from memory
    let _ = time(&["cat", &l], 1);

    println!(
        "bench-parse: {} ({:.0} MiB, {} bytes), best of {runs} run(s), one core per tool (but log x2)",
        log.display(),
        bytes as f64 / 1048576.0,
        bytes
    );
    let mut rows: Vec<(&str, String, Option<Duration>)> = vec![
        ("cat", "cat LOG".into(), time(&["cat", &l], runs)),
        ("wc -l", "wc -l LOG".into(), time(&["wc", "-l", &l], runs)),
    ];
    if have("rg") {
        rows.push((
            "rg -c",
            "rg -c 'Decode batch' LOG".into(),
            time(&["rg", "-j1", "-c", "Decode batch", &l], runs),
        ));
    } else {
        println!("note: rg (ripgrep) not found, skipped (apt-get install -y ripgrep)");
    }
    rows.push((
        "sglang-log",
        "aggregate example: LogReader, every field".into(),
        time(&[&aggregate, &l], runs),
    ));
    rows.push((
        "log x2",
        "aggregate --threads 2: chunks at line boundaries on 2 threads".into(),
        time(&[&aggregate, "--threads", "2", &l], runs),
    ));
    if doctor {
        rows.push((
            "doctor",
            "throughput-doctor diagnose LOG".into(),
            time(&[&doctor_bin, "diagnose", &l], runs),
        ));
    }
    rows.push((
        "python",
        "tools/baseline_regex_parse.py LOG".into(),
        time(&["python3", &baseline, &l], 1),
    ));

    let get = |name: &str| rows.iter().find(|r| r.0 == name).and_then(|r| r.2);
    let (rg, py) = (get("rg -c"), get("python"));
    println!(
        "{:<11} {:>9} {:>10} {:>9} {:>9}  what",
        "tool", "seconds", "MB/s", "x rg -c", "x python"
    );
    for (name, what, t) in &rows {
        match t {
            Some(t) => {
                let s = t.as_secs_f64();
                let ratio = |base: Option<Duration>| {
                    base.map_or("-".to_string(), |b| format!("{:.2}", s / b.as_secs_f64()))
                };
                println!(
                    "{:<11} {:>9.3} {:>10.0} {:>9} {:>9}  {}",
                    name,
                    s,
                    bytes as f64 / 1e6 / s,
                    ratio(rg),
                    ratio(py),
                    what
                );
            }
            None => println!(
                "{:<11} {:>9} {:>10} {:>9} {:>9}  {}",
                name, "failed", "-", "-", "-", what
            ),
        }
    }
    if let (Some(ours), Some(rg), Some(py)) = (get("sglang-log"), rg, py) {
        let (o, r, p) = (ours.as_secs_f64(), rg.as_secs_f64(), py.as_secs_f64());
        println!(
            "goal: full parse <= 1.5x rg -c: {:.2}x ({}); >= 20x faster than python: {:.1}x ({}); >= 2 GB/s: {:.2} GB/s ({})",
            o / r,
            if o / r <= 1.5 { "met" } else { "NOT met" },
            p / o,
            if p / o >= 20.0 { "met" } else { "NOT met" },
            bytes as f64 / 1e9 / o,
            if bytes as f64 / 1e9 / o >= 2.0 {
                "met"
            } else {
                "NOT met"
            },
        );
    }
    ExitCode::SUCCESS
}
