//! The binary under bad flags, bad files and misbehaving servers (issue 13, items 8, 10, 11-21):
//! every refusal names the flag or field and the value, nothing panics, nothing waits on a
//! silent server, no secret is printed.

use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_throughput-doctor"));
    c.env_remove("SGLANG_API_KEY");
    c
}

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

/// A real log: TP0 of issue 3909 (9 decode lines).
fn log() -> PathBuf {
    data("real/002-i3909-throughput-steadily-decreases.log")
}

fn run(args: &[&str]) -> Output {
    bin().args(args).env("NO_COLOR", "1").output().expect("run")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn absurd_flag_values_are_refused_by_clap_never_a_panic() {
    let l = log();
    let l = l.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["diagnose", l, "--watch", "99999999999999999999h"],
            "--watch",
        ),
        (&["diagnose", l, "--watch", "1e300"], "--watch"),
        (&["diagnose", l, "--watch", "1e30s"], "--watch"),
        (&["diagnose", l, "--watch", "0"], "--watch"),
        (&["diagnose", l, "--sample-window", "0"], "--sample-window"),
        (
            &["diagnose", l, "--sample-window", "NaN"],
            "--sample-window",
        ),
        (
            &["diagnose", l, "--sample-window", "inf"],
            "--sample-window",
        ),
        (&["diagnose", l, "--sample-window=-60"], "--sample-window"),
        (
            &["diagnose", l, "--sample-window", "1e308"],
            "--sample-window",
        ),
        (
            &["diagnose", l, "--metrics-polls", "100000"],
            "--metrics-polls",
        ),
        (
            &[
                "run-batch",
                "--server",
                "http://127.0.0.1:9",
                "--prompts",
                "p",
                "--out",
                "o",
                "--grace",
                "inf",
            ],
            "--grace",
        ),
        (
            &[
                "run-batch",
                "--server",
                "http://127.0.0.1:9",
                "--prompts",
                "p",
                "--out",
                "o",
                "--grace",
                "1e20",
            ],
            "--grace",
        ),
        (
            &[
                "run-batch",
                "--server",
                "http://127.0.0.1:9",
                "--prompts",
                "p",
                "--out",
                "o",
                "--window",
                "0",
            ],
            "--window",
        ),
        (
            &[
                "run-batch",
                "--server",
                "http://127.0.0.1:9",
                "--prompts",
                "p",
                "--out",
                "o",
                "--timeout",
                "1e30",
            ],
            "--timeout",
        ),
        (
            &[
                "run-batch",
                "--server",
                "http://127.0.0.1:9",
                "--prompts",
                "p",
                "--out",
                "o",
                "--stall-timeout=-1",
            ],
            "--stall-timeout",
        ),
        (
            &[
                "run-batch",
                "--server",
                "http://127.0.0.1:9",
                "--prompts",
                "p",
                "--out",
                "o",
                "--concurrency",
                "0",
            ],
            "--concurrency",
        ),
        (
            &[
                "run-batch",
                "--server",
                "http://127.0.0.1:9",
                "--prompts",
                "p",
                "--out",
                "o",
                "--max-tokens",
                "0",
            ],
            "--max-tokens",
        ),
    ];
    for (args, flag) in cases {
        let o = run(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let last = args.last().unwrap();
        let value = last.split_once('=').map_or(*last, |(_, v)| v);
        assert!(
            err.contains(&format!("invalid value '{value}' for '{flag} <")),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("must be between")
                || err.contains("not a finite duration")
                || err.contains("is not in"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_server_without_scheme_says_add_http() {
    let o = run(&["diagnose", "--server", "localhost:30000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no scheme: add http:// (e.g. http://localhost:30000)"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "run-batch",
        "--server",
        "localhost:30000",
        "--prompts",
        "p",
        "--out",
        "o",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("add http://"), "{}", stderr(&o));
}

#[test]
fn markdown_dash_goes_to_stdout_and_no_file_named_dash_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let o = bin()
        .current_dir(dir.path())
        .args(["diagnose", "--markdown", "-"])
        .arg(log())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("# throughput-doctor diagnosis\n"),
        "{}",
        stdout(&o)
    );
    assert!(!dir.path().join("-").exists());
}

#[test]
fn plot_must_be_svg_and_bad_output_paths_fail_before_the_work() {
    let o = run(&["diagnose", "--plot", "x.png", log().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the plot is written as SVG, not .png"),
        "{}",
        stderr(&o)
    );

    for (flag, path) in [
        ("--plot", "/nonexistent-dir/x.svg"),
        ("--markdown", "/nonexistent-dir/x.md"),
    ] {
        let o = run(&["diagnose", log().to_str().unwrap(), flag, path]);
        assert_eq!(o.status.code(), Some(1), "{flag}");
        let err = stderr(&o);
        assert!(
            err.starts_with(&format!("error: {flag} {path}: cannot write there")),
            "{err}"
        );
        // Before the work: no report was printed.
        assert_eq!(stdout(&o), "", "{flag}");
    }
}

#[test]
fn server_info_with_impossible_or_mistyped_values_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("tp0.json");
    std::fs::write(
        &zero,
        r#"{"tp_size": 0, "max_total_num_tokens": 116171, "mem_fraction_static": 7.5}"#,
    )
    .unwrap();
    let o = run(&[
        "diagnose",
        log().to_str().unwrap(),
        "--server-info",
        zero.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim(),
        format!(
            "error: --server-info {}: impossible values: tp_size: 0 is out of range (1 to 65536); mem_fraction_static: 7.5 is out of range (above 0 to 1)",
            zero.display()
        )
    );

    let typed = dir.path().join("typed.json");
    std::fs::write(
        &typed,
        r#"{"tp_size": 8, "max_total_num_tokens": "116171"}"#,
    )
    .unwrap();
    let o = run(&[
        "diagnose",
        "--json",
        log().to_str().unwrap(),
        "--server-info",
        typed.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let warning = format!(
        "--server-info {}: max_total_num_tokens: unexpected value \"116171\"",
        typed.display()
    );
    assert!(
        stderr(&o).contains(&format!("warning: {warning}")),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let said = v.to_string();
    assert!(
        said.contains("max_total_num_tokens: unexpected value"),
        "{said}"
    );
}

#[test]
fn gb10_snapshot_is_a_gpu_with_unknown_memory_and_a_bad_snapshot_narrows_the_report() {
    let gb10 = data("real/nvidia-smi/101-marimo-pr6822-gb10-csv-na-and-table-header.txt");
    let o = run(&["gpu", "--snapshot", gb10.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("GPU 0 NVIDIA GB10 (Blackwell): memory not reported (unified memory?): total, used and free unknown"),
        "{out}"
    );
    assert!(!out.contains("0 MiB"), "{out}");
    let o = run(&["gpu", "--json", "--snapshot", gb10.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["devices"][0]["memory_total_bytes"].is_null());

    let o = run(&[
        "diagnose",
        log().to_str().unwrap(),
        "--gpu-snapshot",
        gb10.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("GPU 0 NVIDIA GB10 found, but it reports no memory figures"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("No GPU memory data was given"));

    // A snapshot whose content is not nvidia-smi output narrows the diagnosis (exit 0).
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.txt");
    std::fs::write(
        &junk,
        "0, NVIDIA H100, 100000000000000000000000 MiB, 1 MiB, 2 MiB\n",
    )
    .unwrap();
    let o = run(&[
        "diagnose",
        log().to_str().unwrap(),
        "--gpu-snapshot",
        junk.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("warning: --gpu-snapshot {}:1: memory.total: memory figure \"100000000000000000000000 MiB\" is more than 1 PiB", junk.display())),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("Verdict"), "{}", stdout(&o));
}

#[test]
fn completions_man_pages_and_color_flag() {
    let o = run(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    assert!(
        s.contains("complete -F _throughput__doctor") && s.contains("run-batch"),
        "{s}"
    );
    assert!(s.contains("--stall-timeout"), "{s}");

    let dir = tempfile::tempdir().unwrap();
    let o = run(&["man", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = std::fs::read_to_string(dir.path().join("throughput-doctor-diagnose.1")).unwrap();
    assert!(
        page.starts_with(".ie \\n(.g .ds Aq \\(aq") || page.contains(".TH"),
        "{page}"
    );
    assert!(page.contains("sample\\-window"), "{page}");
    assert!(dir.path().join("throughput-doctor.1").exists());

    // --color always wins over NO_COLOR; never strips even on request.
    let o = run(&["--color", "always", "diagnose", log().to_str().unwrap()]);
    assert!(
        stdout(&o).contains("\u{1b}["),
        "no ANSI with --color always"
    );
    let o = bin()
        .args(["--color", "never", "diagnose"])
        .arg(log())
        .output()
        .unwrap();
    assert!(!stdout(&o).contains("\u{1b}["));
    let o = run(&["diagnose", log().to_str().unwrap()]);
    assert!(
        !stdout(&o).contains("\u{1b}["),
        "NO_COLOR is honoured by auto"
    );
}

/// Accepts connections and never answers (held open for at most 60 s).
fn silent_server() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        l.set_nonblocking(true).unwrap();
        while std::time::Instant::now() < deadline && held.len() < 64 {
            match l.accept() {
                Ok((s, _)) => held.push(s),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    format!("http://{addr}")
}

#[test]
fn watch_reads_an_unchanged_gz_once_and_a_silent_server_does_not_hold_up_reports() {
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("server.log.gz");
    let mut e = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    e.write_all(&std::fs::read(log()).unwrap()).unwrap();
    e.finish().unwrap();
    let url = silent_server();
    let o = bin()
        .args([
            "diagnose",
            "--watch",
            "1s",
            "--watch-count",
            "3",
            "--server",
            &url,
        ])
        .arg(&gz)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let counts: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("server.log.gz:"))
        .collect();
    assert_eq!(counts.len(), 3, "{out}");
    assert!(counts.iter().all(|c| *c == counts[0]), "{counts:?}");
    assert!(counts[0].contains(" 9 decode"), "{counts:?}");
    let timed_out = out
        .lines()
        .filter(|l| l.contains("/metrics: poll timed out after 1.0 s"))
        .count();
    assert_eq!(timed_out, 3, "{out}");
}

fn prompts(dir: &Path, n: usize) -> PathBuf {
    let p = dir.join("prompts.jsonl");
    let text: String = (0..n)
        .map(|i| format!("{{\"id\": \"q{i}\", \"prompt\": \"hello {i}\"}}\n"))
        .collect();
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn run_batch_refuses_its_input_as_output_without_printing_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let p = prompts(dir.path(), 3);
    let before = std::fs::read(&p).unwrap();
    let o = bin()
        .args([
            "run-batch",
            "--server",
            "http://admin:hunter2@127.0.0.1:9",
            "--prompts",
        ])
        .arg(&p)
        .arg("--out")
        .arg(&p)
        .env("SGLANG_API_KEY", "sk-never-printed")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "batch run against http://127.0.0.1:9: the output {} is the prompts file itself; give another --out",
            p.display()
        )),
        "{err}"
    );
    assert!(
        !err.contains("hunter2") && !err.contains("sk-never-printed"),
        "{err}"
    );
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn run_batch_retries_failed_records_and_counts_failures_from_the_file() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sim = rt
        .block_on(sglang_sim::spawn(sglang_sim::SimConfig {
            time_scale: 0.002,
            completion_tokens_mean: 8,
            ..sglang_sim::SimConfig::default()
        }))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = prompts(dir.path(), 3);
    let out = dir.path().join("out.jsonl");
    // An earlier run: q0 failed during an outage.
    std::fs::write(
        &out,
        "{\"id\":\"q0\",\"ok\":false,\"content\":null,\"reasoning_content\":null,\"finish_reason\":null,\"usage\":{\"prompt_tokens\":null,\"completion_tokens\":null},\"submit_unix_s\":1.0,\"permit_wait_s\":0.0,\"start_unix_s\":1.0,\"ttft_s\":null,\"end_unix_s\":2.0,\"latency_s\":1.0,\"attempts\":5,\"error\":\"connect: cannot connect\",\"error_kind\":\"connect\"}\n",
    )
    .unwrap();
    let batch = |extra: &[&str]| {
        bin()
            .args(["run-batch", "--server", &sim.base_url(), "--prompts"])
            .arg(&p)
            .arg("--out")
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = batch(&["--no-retry-failed"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 earlier failed record(s) kept and not sent again (--no-retry-failed); 1 failed in the file in all"),
        "{}",
        stderr(&o)
    );
    let o = batch(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let recs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 3, "{text}");
    assert!(recs.iter().all(|r| r["ok"] == true), "{text}");
    rt.block_on(sim.shutdown());
}

#[test]
fn diagnose_never_prints_url_credentials() {
    for json in [false, true] {
        let mut c = bin();
        c.args([
            "diagnose",
            "--metrics-polls",
            "1",
            "--server",
            "http://admin:hunter2@127.0.0.1:9",
        ])
        .arg(log());
        if json {
            c.arg("--json");
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(!all.contains("hunter2") && !all.contains("admin@"), "{all}");
        assert!(
            stderr(&o).contains("warning: server http://127.0.0.1:9: cannot connect"),
            "{}",
            stderr(&o)
        );
    }
    // Alone (exit 1), the error names the server without its password.
    let o = run(&[
        "diagnose",
        "--metrics-polls",
        "1",
        "--server",
        "http://admin:hunter2@127.0.0.1:9",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("error: --server http://127.0.0.1:9: cannot connect"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("hunter2"));
}

#[test]
fn an_output_that_is_an_input_or_a_device_input_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("server.log");
    std::fs::copy(data("real/001-i938-a100-llama13b-queue12k.log"), &log).expect("copy");
    let before = std::fs::read(&log).expect("log");
    let out = bin()
        .arg("diagnose")
        .arg(&log)
        .arg("--markdown")
        .arg(&log)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is also an input"), "{err}");
    assert_eq!(
        std::fs::read(&log).expect("log"),
        before,
        "the log was overwritten"
    );
    // A device as a side input is read forever: refused at once.
    let out = bin()
        .arg("diagnose")
        .arg(&log)
        .args(["--model-config", "/dev/zero"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    // run-batch refuses a device as --out before connecting anywhere.
    let prompts = dir.path().join("p.jsonl");
    std::fs::write(&prompts, "{\"id\":\"a\",\"prompt\":\"hi\"}\n").expect("prompts");
    let out = bin()
        .args(["run-batch", "--server", "http://127.0.0.1:9", "--prompts"])
        .arg(&prompts)
        .args(["--out", "/dev/null"])
        .output()
        .expect("run");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a regular file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A job directory holding every real log and a second copy of the time-only one (055): one
/// scheduler then has lines with a time and lines without, and the sort that merges them
/// compared a timed line with an untimed one by line number alone, which is no total order;
/// the sort panicked (exit 101). The diagnosis must come out. (The PD decode instances' logs
/// are left out: beside the PD prefill instance's they make two servers, refused together.)
#[test]
fn timed_and_untimed_lines_of_one_scheduler_are_no_panic() {
    let dir = tempfile::tempdir().expect("tmp");
    let real = data("real");
    let mut copied = 0;
    for e in std::fs::read_dir(&real).expect("real logs") {
        let p = e.expect("entry").path();
        if p.extension().is_none_or(|x| x != "log") {
            continue;
        }
        let text = std::fs::read(&p).expect("read");
        let pd_decode = [&b"#transfer-req"[..], b"pre-allocated usage"]
            .iter()
            .any(|f| text.windows(f.len()).any(|w| w == *f));
        if !pd_decode {
            std::fs::copy(&p, dir.path().join(p.file_name().expect("name"))).expect("copy");
            copied += 1;
        }
    }
    assert!(copied >= 40, "{copied}");
    std::fs::copy(
        real.join("055-i1612-engine-generate-offline-tqdm-time-only.log"),
        dir.path().join("zzz-055-copy.log"),
    )
    .expect("copy");
    let out = bin()
        .args(["diagnose", "--json"])
        .arg(dir.path())
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(v["bottleneck"].is_string(), "{v}");
}
