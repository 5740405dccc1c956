//! `cargo xtask bench-parse [SIZE_MB]`: generates a SIZE_MB MiB SGLang log with
//! `tools/gen_sglang_log.py` (default 512, cached under `target/bench-parse/`), then times on it,
//! side by side: `cat`, `wc -l`, `rg -c 'Decode batch'`, our full parse + aggregate (the
//! `sglang-log` `aggregate` example: every field of every line; once on one thread, once with
//! `--threads 2`, `sglang_log::parallel`), `throughput-doctor diagnose` (the whole pipeline: on
//! every core, on one core with `taskset -c 0`, on a directory of the log's two halves as two
//! files, and on the log compressed with `gzip -6`), and the hand-written Python regex parser
//! (`tools/baseline_regex_parse.py`). Each tool runs `BENCH_RUNS` times (default 5),
//! interleaved round by round; the best wall time counts, and the load average is printed
//! before and after. Prints each time, MB/s, the ratios against `rg -c` and Python, and the
//! peak resident memory of the tool (MB, from GNU `time` when `/usr/bin/time` exists), then
//! each of issue 15's goals and whether it is met. Tools that are missing (`rg`, `python3`,
//! `taskset`, `gzip`) are skipped with a note.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

pub(crate) fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What [`time`] measured: the best wall time and the largest peak resident memory of the runs
/// (bytes; `None` without GNU `time`).
#[derive(Clone, Copy)]
struct Measured {
    wall: Duration,
    rss: Option<u64>,
}

/// GNU `time`, which reports a child's peak resident memory (`-f %M`, KiB).
const GNU_TIME: &str = "/usr/bin/time";

/// Best wall time of `runs` runs of `cmd` (stdout discarded) and their peak memory; `None` if
/// it fails.
fn time(cmd: &[&str], runs: usize) -> Option<Measured> {
    let gnu_time = Path::new(GNU_TIME).exists();
    let rss_file = std::env::temp_dir().join(format!("bench-parse-rss-{}", std::process::id()));
    let mut best: Option<Measured> = None;
    for _ in 0..runs {
        let mut c = if gnu_time {
            let mut c = Command::new(GNU_TIME);
            c.arg("-f").arg("%M").arg("-o").arg(&rss_file).args(cmd);
            c
        } else {
            let mut c = Command::new(cmd[0]);
            c.args(&cmd[1..]);
            c
        };
        let t0 = Instant::now();
        let st = c.stdout(Stdio::null()).status();
        let wall = t0.elapsed();
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
        // GNU time writes `Command exited with non-zero status N` first when the tool fails
        let rss = std::fs::read_to_string(&rss_file).ok().and_then(|t| {
            t.lines()
                .last()
                .and_then(|l| l.trim().parse::<u64>().ok())
                .map(|kib| kib * 1024)
        });
        best = Some(match best {
            None => Measured { wall, rss },
            Some(b) => Measured {
                wall: b.wall.min(wall),
                rss: b.rss.max(rss),
            },
        });
    }
    let _ = std::fs::remove_file(&rss_file);
    best
}

/// The tools' best runs, measured round by round: round `r` runs every tool whose run count
/// is above `r` once, in order, so that a change of the shared machine's load between rounds
/// reaches every tool alike (a tool that fails once is not run again).
fn interleaved<'a>(
    tools: &'a [(&'a str, String, Vec<String>, usize)],
    rounds: usize,
) -> Vec<(&'a str, String, Option<Measured>)> {
    let mut best: Vec<Option<Measured>> = vec![None; tools.len()];
    let mut failed = vec![false; tools.len()];
    for r in 0..rounds {
        for (i, (_, _, argv, runs)) in tools.iter().enumerate() {
            if r >= *runs || failed[i] {
                continue;
            }
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            match time(&argv, 1) {
                Some(m) => {
                    best[i] = Some(match best[i] {
                        None => m,
                        Some(b) => Measured {
                            wall: b.wall.min(m.wall),
                            rss: b.rss.max(m.rss),
                        },
                    });
                }
                None => {
                    failed[i] = true;
                    best[i] = None;
                }
            }
        }
    }
    tools
        .iter()
        .zip(best)
        .map(|((name, what, _, _), m)| (*name, what.clone(), m))
        .collect()
}

/// The machine's load average (`/proc/loadavg`: 1, 5 and 15 minutes), or why it is unknown.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|e| format!("unknown ({e})"))
}

/// Writes the two halves of `log` (cut at the line boundary nearest the middle) as
/// `dir/node0/server.log` and `dir/node1/server.log`, once: a job directory of two files of
/// the same total size.
fn two_halves(log: &Path, dir: &Path) -> std::io::Result<()> {
    let (a, b) = (
        dir.join("node0").join("server.log"),
        dir.join("node1").join("server.log"),
    );
    if a.exists() && b.exists() {
        return Ok(());
    }
    let bytes = std::fs::read(log)?;
    let mid = bytes.len() / 2;
    let cut = bytes[mid..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(bytes.len(), |i| mid + i + 1);
    for (path, part) in [(&a, &bytes[..cut]), (&b, &bytes[cut..])] {
        std::fs::create_dir_all(path.parent().unwrap_or(dir))?;
        std::fs::write(path, part)?;
    }
    Ok(())
}

/// Runs `cargo build --release` for the given args (the target dir is cargo's own choice:
/// `CARGO_TARGET_DIR` or `target/`); returns the target dir.
pub(crate) fn build(root: &Path, args: &[&str]) -> Option<PathBuf> {
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

/// The generated seed-7 log of `size_mb` MiB under `target/bench-parse/`, generated with
/// `tools/gen_sglang_log.py` the first time; `None` (with the reason on stderr) when it cannot
/// be made.
pub(crate) fn seed7_log(target: &Path, root: &Path, size_mb: f64) -> Option<PathBuf> {
    let dir = target.join("bench-parse");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("bench-parse: cannot create {}: {e}", dir.display());
        return None;
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
            return None;
        }
    }
    Some(log)
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
        .unwrap_or(5)
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
    let Some(log) = seed7_log(&target, root, size_mb) else {
        return ExitCode::FAILURE;
    };
    let dir = target.join("bench-parse");
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
        "bench-parse: {} ({:.0} MiB, {} bytes), best of {runs} interleaved round(s) (each round runs every tool once, so a change in the machine's load reaches all of them); one thread each but log x2 (two) and doctor (every core, one with taskset)",
        log.display(),
        bytes as f64 / 1048576.0,
        bytes
    );
    println!("load average before: {}", load_average());
    // (name, what, argv, runs): python runs once (tens of seconds), in the first round
    let mut tools: Vec<(&str, String, Vec<String>, usize)> = vec![
        ("cat", "cat LOG".into(), vec!["cat".into(), l.clone()], runs),
        (
            "wc -l",
            "wc -l LOG".into(),
            vec!["wc".into(), "-l".into(), l.clone()],
            runs,
        ),
    ];
    if have("rg") {
        tools.push((
            "rg -c",
            "rg -c 'Decode batch' LOG".into(),
            ["rg", "-j1", "-c", "Decode batch", &l]
                .map(String::from)
                .to_vec(),
            runs,
        ));
    } else {
        println!("note: rg (ripgrep) not found, skipped (apt-get install -y ripgrep)");
    }
    tools.push((
        "sglang-log",
        "aggregate example: LogReader, every field".into(),
        vec![aggregate.clone(), l.clone()],
        runs,
    ));
    tools.push((
        "log x2",
        "aggregate --threads 2: chunks at line boundaries on 2 threads".into(),
        [aggregate.as_str(), "--threads", "2", &l]
            .map(String::from)
            .to_vec(),
        runs,
    ));
    let two_dir = dir.join(format!("two-halves-{size_mb}MiB"));
    if doctor {
        tools.push((
            "doctor",
            "throughput-doctor diagnose LOG (every core)".into(),
            [doctor_bin.as_str(), "diagnose", &l]
                .map(String::from)
                .to_vec(),
            runs,
        ));
        if have("taskset") {
            tools.push((
                "doctor 1cpu",
                "taskset -c 0 throughput-doctor diagnose LOG".into(),
                ["taskset", "-c", "0", &doctor_bin, "diagnose", &l]
                    .map(String::from)
                    .to_vec(),
                runs,
            ));
        } else {
            println!("note: taskset not found, the one-core diagnose row is skipped");
        }
        // (the halves' page cache is warmed by the first of the runs; the best one counts)
        match two_halves(&log, &two_dir) {
            Ok(()) => tools.push((
                "doctor 2f",
                "throughput-doctor diagnose DIR: LOG's two halves as two files".into(),
                [doctor_bin.as_str(), "diagnose", &two_dir.to_string_lossy()]
                    .map(String::from)
                    .to_vec(),
                runs,
            )),
            Err(e) => eprintln!("bench-parse: cannot write {}: {e}", two_dir.display()),
        }
        // a rotated part is usually compressed: the same log as .gz (MB/s of the plain bytes)
        let gz = dir.join(format!("gen-{size_mb}MiB-seed7.log.gz"));
        let made = gz.exists()
            || (have("gzip")
                && std::fs::File::create(&gz).is_ok_and(|out| {
                    Command::new("gzip")
                        .args(["-c", "-6", &l])
                        .stdout(out)
                        .status()
                        .is_ok_and(|s| s.success())
                }));
        if made {
            tools.push((
                "doctor gz",
                "throughput-doctor diagnose LOG.gz (gzip -6)".into(),
                [doctor_bin.as_str(), "diagnose", &gz.to_string_lossy()]
                    .map(String::from)
                    .to_vec(),
                runs,
            ));
        } else {
            let _ = std::fs::remove_file(&gz);
            println!("note: gzip not found or failed, the .gz row is skipped");
        }
    }
    tools.push((
        "python",
        "tools/baseline_regex_parse.py LOG".into(),
        vec!["python3".into(), baseline.clone(), l.clone()],
        1,
    ));
    let rows = interleaved(&tools, runs);
    println!("load average after:  {}", load_average());
    let get = |name: &str| rows.iter().find(|r| r.0 == name).and_then(|r| r.2);
    let secs = |name: &str| get(name).map(|m| m.wall.as_secs_f64());
    let (rg, py) = (secs("rg -c"), secs("python"));
    println!(
        "{:<11} {:>9} {:>10} {:>9} {:>9} {:>8}  what",
        "tool", "seconds", "MB/s", "x rg -c", "x python", "peak MB"
    );
    for (name, what, m) in &rows {
        match m {
            Some(m) => {
                let s = m.wall.as_secs_f64();
                let ratio =
                    |base: Option<f64>| base.map_or("-".to_string(), |b| format!("{:.2}", s / b));
                let rss = m
                    .rss
                    .map_or("-".to_string(), |b| format!("{:.0}", b as f64 / 1e6));
                println!(
                    "{:<11} {:>9.3} {:>10.0} {:>9} {:>9} {:>8}  {}",
                    name,
                    s,
                    bytes as f64 / 1e6 / s,
                    ratio(rg),
                    ratio(py),
                    rss,
                    what
                );
            }
            None => println!(
                "{:<11} {:>9} {:>10} {:>9} {:>9} {:>8}  {}",
                name, "failed", "-", "-", "-", "-", what
            ),
        }
    }
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    if let (Some(o), Some(r), Some(p)) = (secs("sglang-log"), rg, py) {
        println!(
            "goal: full parse on one core <= 1.5x rg -c: {:.2}x ({}); >= 20x faster than python: {:.1}x ({}); >= 2 GB/s: {:.2} GB/s ({})",
            o / r,
            verdict(o / r <= 1.5),
            p / o,
            verdict(p / o >= 20.0),
            bytes as f64 / 1e9 / o,
            verdict(bytes as f64 / 1e9 / o >= 2.0),
        );
    }
    if let (Some(d), Some(r)) = (secs("doctor"), rg) {
        let per_gib = d * 1073741824.0 / bytes as f64;
        println!(
            "goal: diagnose <= 2x rg -c: {:.2}x ({}); 1 GiB in < 0.5 s: {per_gib:.2} s per GiB at this rate ({})",
            d / r,
            verdict(d / r <= 2.0),
            verdict(per_gib < 0.5),
        );
    }
    if let (Some(two), Some(one)) = (secs("doctor 2f"), secs("doctor 1cpu")) {
        println!(
            "goal: two files on two cores near 2x the throughput of one core: {:.2}x",
            one / two
        );
    }
    if let Some(rss) = get("doctor").and_then(|m| m.rss) {
        println!(
            "goal: diagnose's peak memory < 64 MB: {:.0} MB ({})",
            rss as f64 / 1e6,
            verdict(rss < 64_000_000),
        );
    }
    ExitCode::SUCCESS
}
