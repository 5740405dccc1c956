//! `cargo xtask bench-client [REQUESTS]`: requests/s and CPU-seconds per 1,000 requests of our
//! batch client against the simulated server in near-zero-latency mode, side by side with the
//! Python asyncio + aiohttp client in `benches/python_client.py` doing the same work.
//!
//! The simulator is pinned to core 0 and each client to core 1 when `taskset` exists, so the
//! clients' CPU figures are their own. Both clients print one JSON line; this task prints them and
//! the ratios. Python (or aiohttp) missing: that row is skipped with a note.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

fn field(line: &str, key: &str) -> Option<f64> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = line[at..].trim_start();
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

fn pinned(core: &str, program: &str) -> Command {
    let has_taskset = Command::new("sh")
        .args(["-c", "command -v taskset"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if has_taskset {
        let mut c = Command::new("taskset");
        c.args(["-c", core, program]);
        c
    } else {
        Command::new(program)
    }
}

fn run_client(mut c: Command, label: &str) -> Option<String> {
    let out = c.output().ok()?;
    if !out.status.success() {
        eprintln!(
            "bench-client: {label} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(str::to_string)
}

pub fn run(root: &Path, args: &[String]) -> ExitCode {
    let requests: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(50_000);
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(Into::into)
        .unwrap_or_else(|_| root.join("target"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    for (pkg, what) in [
        ("sglang-sim", ["--bin", "sglang-sim"]),
        ("sglang-client", ["--example", "bench_client"]),
    ] {
        let st = Command::new(&cargo)
            .current_dir(root)
            .args(["build", "--quiet", "--release", "-p", pkg])
            .args(what)
            .status();
        if !st.is_ok_and(|s| s.success()) {
            eprintln!("bench-client: building {pkg} failed");
            return ExitCode::FAILURE;
        }
    }
    let sim_bin = target.join("release/sglang-sim");
    let client_bin = target.join("release/examples/bench_client");
    let mut sim = match pinned("0", &sim_bin.to_string_lossy())
        .args(["--near-zero", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench-client: cannot start the simulator: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The simulator prints "sglang-sim listening on http://127.0.0.1:PORT".
    let url = sim.stdout.take().and_then(|o| {
        BufReader::new(o)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                l.split_whitespace()
                    .last()
                    .filter(|u| u.starts_with("http"))
                    .map(str::to_string)
            })
    });
    let Some(url) = url else {
        eprintln!("bench-client: the simulator did not print its address");
        let _ = sim.kill();
        return ExitCode::FAILURE;
    };
    let n = requests.to_string();
    let mut rust = pinned("1", &client_bin.to_string_lossy());
    rust.args(["--url", &url, "--requests", &n, "--concurrency", "256"]);
    let rust_line = run_client(rust, "rust client");
    let py_n = (requests / 2).max(1000).to_string();
    let mut py = pinned("1", "python3");
    py.arg(root.join("benches/python_client.py")).args([
        "--url",
        &url,
        "--requests",
        &py_n,
        "--concurrency",
        "256",
    ]);
    let py_line = run_client(py, "python client (needs `pip install aiohttp`)");
    let _ = sim.kill();
    let _ = sim.wait();

    println!(
        "{:<16} {:>10} {:>12} {:>22}",
        "client", "requests", "req/s", "CPU s / 1000 requests"
    );
    for (name, line) in [("rust (ours)", &rust_line), ("python aiohttp", &py_line)] {
        match line {
            Some(l) => println!(
                "{:<16} {:>10} {:>12.0} {:>22.4}",
                name,
                field(l, "requests").unwrap_or(f64::NAN),
                field(l, "req_per_s").unwrap_or(f64::NAN),
                field(l, "cpu_s_per_1000_req").unwrap_or(f64::NAN)
            ),
            None => println!("{name:<16} skipped"),
        }
    }
    if let (Some(r), Some(p)) = (&rust_line, &py_line) {
        let (rr, pr) = (
            field(r, "req_per_s").unwrap_or(f64::NAN),
            field(p, "req_per_s").unwrap_or(f64::NAN),
        );
        let (rc, pc) = (
            field(r, "cpu_s_per_1000_req").unwrap_or(f64::NAN),
            field(p, "cpu_s_per_1000_req").unwrap_or(f64::NAN),
        );
        println!(
            "ratios: {:.1}x the requests/s, {:.1}x less CPU per request (goals: >= 20,000 req/s, >= 10x less CPU)",
            rr / pr,
            pc / rc
        );
    }
    if rust_line.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
