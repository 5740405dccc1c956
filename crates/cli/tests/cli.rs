//! The binary as a user runs it: exit codes, stdout/stderr, every real log.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_throughput-doctor"))
}

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

/// `throughput-doctor diagnose FILE` with colour off; its stdout (the run must exit 0).
fn diagnose_text(file: &Path) -> String {
    diagnose_args_text(&[file.as_os_str()])
}

/// `throughput-doctor diagnose ARGS...` with colour off; its stdout (the run must exit 0).
fn diagnose_args_text(args: &[&std::ffi::OsStr]) -> String {
    let out = bin()
        .arg("diagnose")
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn embedded_sample_gives_a_verdict() {
    let out = bin()
        .arg("diagnose")
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Verdict: KV-cache bound:"), "{text}");
    assert!(
        text.contains("<embedded sample: kimi-k25-b2/server.log>: 6191 lines"),
        "{text}"
    );
    // NO_COLOR: no escape sequences
    assert!(!text.contains('\u{1b}'));
    // the rest of the embedded scenario is read too (a broken fixture must not vanish silently)
    assert!(text.contains("KV capacity what-if"), "{text}");
    assert!(
        text.contains("the client printed       0.2 req/s"),
        "{text}"
    );
    assert!(
        text.contains("<embedded sample: kimi-k25-b2/nvidia-smi.csv>"),
        "{text}"
    );
}

#[test]
fn every_real_log_exits_0_with_valid_json() {
    for dir in ["real", "real-long"] {
        for entry in std::fs::read_dir(data(dir)).expect("dir") {
            let path = entry.expect("entry").path();
            if path.extension().and_then(|e| e.to_str()) != Some("log") {
                continue;
            }
            let out = bin()
                .arg("diagnose")
                .arg(&path)
                .arg("--json")
                .output()
                .expect("run");
            // a file that is another format's (a saved /metrics) is named in one line, exit 1
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("not an SGLang server log") {
                assert_eq!(out.status.code(), Some(1), "{}", path.display());
                assert_eq!(err.trim_end().lines().count(), 1, "{err}");
                continue;
            }
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert_eq!(v["schema_version"], 2);
            assert!(v["bottleneck"].is_string());
        }
    }
}

/// A saved /metrics scrape given as the log is named, with the flags that read /metrics, in
/// one line and exit 1 (issue 11, pattern 9); `--json` changes nothing.
#[test]
fn a_prometheus_dump_is_named_not_diagnosed() {
    for json in [false, true] {
        let mut cmd = bin();
        cmd.arg("diagnose");
        if json {
            cmd.arg("--json");
        }
        let out = cmd
            .arg(data("real/040-pr7944-prometheus-metrics-pd.log"))
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.contains("this looks like a Prometheus /metrics dump (13 line(s) in its format, the first at line 1)"),
            "{err}"
        );
        assert!(
            err.contains("--server URL") && err.contains("--prometheus URL"),
            "{err}"
        );
    }
}

#[test]
fn missing_log_is_a_clear_error_naming_the_path() {
    let out = bin()
        .args(["diagnose", "/nonexistent/server.log"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/server.log"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // the cause is said once, not repeated by every layer
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn bad_arguments_exit_2() {
    let out = bin()
        .args(["diagnose", "--no-such-flag"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn gpu_without_a_driver_exits_1_with_one_line_and_diagnose_carries_on() {
    let out = bin().arg("gpu").output().expect("run");
    if out.status.success() {
        // A machine with a working NVIDIA driver: the probe must list at least one device.
        assert!(String::from_utf8_lossy(&out.stdout).contains("GPU 0"));
        return;
    }
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("GPU data unavailable") || err.contains("NVML"),
        "{err}"
    );
    // diagnose --gpu still works and says why GPU memory is missing
    let out = bin()
        .args(["diagnose", "--gpu", "--json"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let nc = v["not_concluded"].to_string();
    assert!(nc.contains("GPU memory could not be read"), "{nc}");
}

#[test]
fn gpu_snapshot_file_is_read() {
    let out = bin()
        .args(["gpu", "--snapshot"])
        .arg(data("real/nvidia-smi/002-trtllm-i10278-b200x8-table.txt"))
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("total 183359 MiB"), "{text}");
    assert!(text.contains("Blackwell"), "{text}");
}

/// A real H200's nvidia-smi outputs (gpu-probe's `tests/fixtures/h200-*`): each reads as
/// nvidia-smi printed it, with no version shown that the file does not give, and `-q`'s used
/// without the driver's 616 MiB reserve (it once read 616 MiB used on an idle card).
#[test]
fn gpu_snapshot_of_a_real_h200() {
    let fixture = |name: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../gpu-probe/tests/fixtures")
            .join(name)
    };
    let gpu = |name: &str| {
        let out = bin()
            .args(["gpu", "--color", "never", "--snapshot"])
            .arg(fixture(name))
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0), "{name}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let q = gpu("h200-q.txt");
    assert!(q.ends_with("h200-q.txt); driver 580.159.04; CUDA 13.0\n  GPU 0 NVIDIA H200 (Hopper): total 143771 MiB, used 0 MiB, free 143156 MiB, reserved 616 MiB\n"), "{q}");
    let csv = gpu("h200-query-held.csv");
    assert!(csv.ends_with("h200-query-held.csv); driver 580.159.04\n  GPU 0 NVIDIA H200 (Hopper): total 143771 MiB, used 21099 MiB, free 122058 MiB\n"), "{csv}");
    let t = gpu("h200-table.txt");
    assert!(t.contains("free 143771 MiB\n"), "{t}");
    assert!(t.contains("so free is overstated by that reserve"), "{t}");
    let m = gpu("h200-q-memory.txt");
    assert!(m.contains("GPU 0 (no name or architecture in this output): total 143771 MiB, used 0 MiB, free 143156 MiB, reserved 616 MiB\n"), "{m}");
}

/// `gpu --check --json`: without a driver one line on stderr, exit 1; on a GPU host one JSON
/// object with both snapshots and the mismatches.
#[test]
fn gpu_check_json() {
    let out = bin()
        .args(["gpu", "--check", "--json"])
        .output()
        .expect("run");
    if out.status.success() {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(v["agree"], true, "{v}");
        assert_eq!(v["nvml"]["source"]["kind"], "nvml");
        assert!(v["mismatches"].as_array().is_some_and(|m| m.is_empty()));
        return;
    }
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn markdown_report_is_written() {
    let dir = std::env::temp_dir().join(format!("td-md-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let md = dir.join("report.md");
    let out = bin()
        .arg("diagnose")
        .arg("--markdown")
        .arg(&md)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&md).expect("md");
    assert!(text.starts_with("# throughput-doctor diagnosis"));
    assert!(text.contains("**Verdict: KV-cache bound:**"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_empty_log_is_an_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("empty.log");
    std::fs::write(&p, b"").expect("write");
    let out = bin()
        .args(["diagnose", "--json"])
        .arg(&p)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {} is empty; throughput-doctor reads SGLang server logs",
            p.display()
        )
    );
}

#[test]
fn a_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = bin().arg("diagnose").arg(dir.path()).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&dir.path().display().to_string()), "{err}");
}

#[test]
fn markdown_report_carries_recommendations_and_the_what_if_table() {
    let dir = tempfile::tempdir().expect("tmp");
    let md = dir.path().join("r.md");
    let s = data("scenarios/kimi-k25-b2");
    let out = bin()
        .arg("diagnose")
        .arg(s.join("server.log"))
        .arg("--gpu-snapshot")
        .arg(s.join("nvidia-smi.csv"))
        .arg("--model-config")
        .arg(s.join("config.json"))
        .arg("--client-log")
        .arg(s.join("client.log"))
        .arg("--client-records")
        .arg(s.join("responses.jsonl"))
        .arg("--markdown")
        .arg(&md)
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&md).expect("md");
    for heading in [
        "## Recommendations (changes that keep outputs as they are first, each group by expected gain; what not to change last)",
        "## Client vs server",
        "## KV capacity what-if",
        "## Findings",
    ] {
        assert!(text.contains(heading), "{heading} missing:\n{text}");
    }
    // pre is SGLang's own (the log's `Load weight end` line: 95.00 GiB), not the card's
    // 95.59 GiB total: 0.08 × 95.00 GiB / 70,272 B = 116,126 more tokens
    assert!(
        text.contains("| mem_fraction_static 0.93 | 232297 | +100.0% |"),
        "{text}"
    );
    assert!(text.contains("OOM likely"));
}

#[test]
fn named_files_that_cannot_be_read_are_errors() {
    for flag in [
        "--model-config",
        "--server-info",
        "--gpu-snapshot",
        "--client-log",
        "--client-records",
    ] {
        let out = bin()
            .args(["diagnose", flag, "/nonexistent/file"])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(flag) && err.contains("/nonexistent/file"),
            "{flag}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn every_benchmark_paste_is_read_as_the_client_and_as_a_log() {
    // (file, successful requests, output tok/s) as the pastes print them.
    let cases = [
        (
            "001-i2805-sglang-0.4.0-sharegpt-partial-success.txt",
            1648,
            1915.40,
        ),
        ("002-i8285-sglang-ttft-unstable-rate330.txt", 660, 12195.89),
        ("004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt", 100, 93.08),
        (
            "005-pr17216-sglang-decode-offload-16k-peak-fields.txt",
            128,
            296.37,
        ),
        ("007-pr2643-v0.4.1post2-dsv3-sharegpt5k.txt", 5000, 2673.55),
    ];
    for (file, ok, out_tps) in cases {
        let path = data("real/bench").join(file);
        for as_client in [true, false] {
            let mut cmd = bin();
            cmd.args(["diagnose", "--json"]);
            if as_client {
                // no server log: only the benchmark speaks
                cmd.arg("--client-log");
            }
            let out = cmd.arg(&path).output().expect("run");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{file}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            let run = &v["benchmark_runs"][0]["summary"];
            assert_eq!(run["successful_requests"], ok, "{file}");
            assert_eq!(run["output_tok_per_s"], out_tps, "{file}");
            assert_eq!(v["client"]["format"], "benchmark_summary", "{file}");
            assert_eq!(v["client"]["completed"], ok, "{file}");
        }
    }
    // 001's failures lead the findings in the text report too.
    let text = diagnose_text(&data(
        "real/bench/001-i2805-sglang-0.4.0-sharegpt-partial-success.txt",
    ));
    assert!(
        text.contains("1. 1,352 of 3,000 benchmark requests failed (45%) [high confidence]"),
        "{text}"
    );
    assert!(
        text.contains("1648 ok of 3000 in 170.4 s · 9.67 req/s · output 1915 tok/s"),
        "{text}"
    );
}

#[test]
fn client_file_alone_is_diagnosed_without_the_embedded_sample() {
    let bench = data("real/bench/002-i8285-sglang-ttft-unstable-rate330.txt");
    let out = bin()
        .arg("diagnose")
        .arg("--client-log")
        .arg(&bench)
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("embedded sample"), "{text}");
    assert!(!err.contains("embedded sample"), "{err}");
    // the benchmark alone: its summary gives the headline, nothing about a server is invented
    assert!(
        text.contains(
            "Verdict: No SGLang scheduler lines: only a benchmark summary of SGLang bench_serving — 660 requests succeeded, 12196 output tok/s over the whole run"
        ),
        "{text}"
    );
    assert!(!text.contains("implied by server tokens"), "{text}");
    assert!(!text.contains("KV pool:"), "{text}");
    assert!(
        text.contains("No SGLang scheduler lines (Prefill batch / Decode batch) were found"),
        "{text}"
    );

    // Any single evidence flag means "diagnose mine": none of them pulls in the sample.
    let s = data("scenarios/kimi-k25-b1");
    for (flag, file) in [
        ("--client-records", "responses.jsonl"),
        ("--server-info", "server_info.json"),
        ("--gpu-snapshot", "nvidia-smi.csv"),
        ("--model-config", "config.json"),
    ] {
        let out = bin()
            .args(["diagnose", "--json", flag])
            .arg(s.join(file))
            .output()
            .expect("run");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{flag}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(v["inputs"], serde_json::json!([]), "{flag}");
        assert_eq!(v["bottleneck"], "no_scheduler_lines", "{flag}");
        assert!(
            !out.stdout.windows(15).any(|w| w == b"embedded sample"),
            "{flag}: {}",
            v["sources"]
        );
    }
}

/// A loopback port nobody listens on: bind one, note it, let it go.
fn closed_port_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

#[test]
fn unreachable_server_as_the_only_input_is_an_error() {
    let url = closed_port_url();
    let out = bin()
        .args(["diagnose", "--server", &url, "--metrics-polls", "1"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("error: --server {url}: cannot connect to {url}/")),
        "{err}"
    );
    assert!(err.contains("it was the only input"), "{err}");

    // Beside a log, the same server only narrows the report.
    let out = bin()
        .args([
            "diagnose",
            "--json",
            "--server",
            &url,
            "--metrics-polls",
            "1",
        ])
        .arg(data("real/001-i938-a100-llama13b-queue12k.log"))
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let nc = v["not_concluded"].to_string();
    assert!(
        nc.contains(&format!("server {url}: cannot connect")),
        "{nc}"
    );
    assert_ne!(v["bottleneck"], "no_scheduler_lines");
}

#[test]
fn truncated_gzip_log_is_diagnosed_up_to_the_cut_with_a_warning() {
    use std::io::{Read as _, Write as _};
    let original = std::fs::read(data("real-long/ascend-dsr1-pd-decode-dp32.log")).expect("log");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&original).expect("gzip");
    let gz = enc.finish().expect("gzip");
    let cut = &gz[..gz.len() / 2];
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("trunc.log.gz");
    std::fs::write(&p, cut).expect("write");

    // What a decoder gets out of the half before it fails: its whole lines are what counts.
    let mut decoded = Vec::new();
    let mut dec = flate2::read::GzDecoder::new(cut);
    let mut chunk = [0u8; 4096];
    loop {
        match dec.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => decoded.extend_from_slice(&chunk[..n]),
        }
    }
    let whole_lines = decoded.iter().filter(|&&b| b == b'\n').count();
    assert!(whole_lines > 1000 && whole_lines < 11234, "{whole_lines}");

    let out = bin()
        .args(["diagnose", "--json"])
        .arg(&p)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let name = p.display().to_string();
    let expected = format!(
        "warning: {name}: the gzip stream is truncated or corrupt after line {whole_lines} (near compressed byte "
    );
    assert!(err.contains(&expected), "{err}");
    assert!(err.contains(&format!(" of {})", cut.len())), "{err}");
    assert!(
        err.contains(&format!(
            "only the {whole_lines} lines before it were diagnosed"
        )),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["inputs"][0]["lines"], whole_lines);
    assert!(v["inputs"][0]["decode_lines"].as_u64().unwrap_or(0) > 0);
    assert_ne!(v["bottleneck"], "no_scheduler_lines");
    let nc = v["not_concluded"].to_string();
    assert!(
        nc.contains(&format!(
            "{name}: the gzip stream is truncated or corrupt after line {whole_lines}"
        )),
        "{nc}"
    );

    // The whole file gzipped is read without a warning, every line of it.
    let full = dir.path().join("full.log.gz");
    std::fs::write(&full, &gz).expect("write");
    let out = bin()
        .args(["diagnose", "--json"])
        .arg(&full)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["inputs"][0]["lines"], 11234);
}

#[test]
fn a_binary_file_given_as_a_log_is_called_out() {
    let dir = tempfile::tempdir().expect("tmp");
    // 4 KiB of pseudo-random bytes (a fixed LCG, so the count below is the same every run)
    let mut x: u32 = 12345;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (x >> 16) as u8
        })
        .collect();
    // and the start of an ELF executable: this very binary
    let elf: Vec<u8> = std::fs::read(env!("CARGO_BIN_EXE_throughput-doctor"))
        .expect("binary")
        .into_iter()
        .take(256 * 1024)
        .collect();
    assert_eq!(&elf[..4], b"\x7fELF");
    for (file, bytes, within) in [
        ("random.log", &random, "its 4096 bytes"),
        ("elf.log", &elf, "the first 64 KiB"),
    ] {
        let p = dir.path().join(file);
        std::fs::write(&p, bytes).expect("write");
        let nul = bytes.iter().take(64 * 1024).filter(|&&b| b == 0).count();
        assert!(nul > 0, "{file}");
        // the only input, and no SGLang line in it: refused, saying why
        let out = bin()
            .args(["diagnose", "--json"])
            .arg(&p)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "error: {} does not look like a text log ({nul} NUL bytes in {within})",
                p.display()
            )),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "{file}");
    }
    // No NUL, but not text either: Latin-1 bytes that are invalid UTF-8, and control bytes.
    let p = dir.path().join("latin1.log");
    let mut odd = vec![0xe9u8; 3000];
    odd.extend(std::iter::repeat_n(0x01u8, 96));
    odd.extend(std::iter::repeat_n(b'a', 1000));
    std::fs::write(&p, &odd).expect("write");
    let out = bin().arg("diagnose").arg(&p).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "error: {} does not look like a text log (3096 control or invalid UTF-8 bytes in its 4096 bytes)",
            p.display()
        )),
        "{err}"
    );
    // A text file without any SGLang line is refused too, but not called binary.
    let text_log = dir.path().join("notes.log");
    std::fs::write(&text_log, b"starting the run\nall done\n").expect("write");
    let out = bin()
        .args(["diagnose", "--json"])
        .arg(&text_log)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("does not look like a text log"), "{err}");
    assert!(
        err.contains("none of its 2 line(s) is an SGLang server line"),
        "{err}"
    );
}

#[test]
fn help_says_what_each_option_takes_and_in_which_unit() {
    let help = |sub: &str| {
        let out = bin().args([sub, "--help"]).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{sub}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let d = help("diagnose");
    for fragment in [
        "a saved `python -m sglang.bench_serving` output (its 'Serving Benchmark Result' block)",
        "SGLang's multi-turn benchmark summary ('Performance metrics summary:')",
        "--sample-window <SECONDS>  Length in seconds of a short measurement someone plans (e.g. 60 s of the request rate)",
        "how long a window a ±10% answer needs",
        "--metrics-polls <N>        With --server: how many /metrics polls to take, one second apart",
        "(a number with ms, s, m or h, e.g. 10s; bare = seconds)",
        "With no input at all (no log, --server, --server-info, --gpu, --gpu-snapshot, --model-config, --client-log or --client-records), the embedded sample is diagnosed",
    ] {
        assert!(d.contains(fragment), "{fragment:?} missing:\n{d}");
    }
    assert!(!d.contains("someone proposes"), "{d}");
    let g = help("gpu");
    assert!(
        g.contains("Print the snapshot as JSON (memory in bytes) instead of text (MiB, rounded up as nvidia-smi rounds)"),
        "{g}"
    );
    let r = help("run-batch");
    for fragment in [
        "--concurrency <N>",
        "--max-tokens <TOKENS>",
        "--window <SECONDS>",
        "--grace <SECONDS>",
        "progress rates (req/s, tok/s)",
    ] {
        assert!(r.contains(fragment), "{fragment:?} missing:\n{r}");
    }

    // What the help promises: the multi-turn summary is read through --client-log.
    let out = bin()
        .args(["diagnose", "--json", "--client-log"])
        .arg(data(
            "real/bench/008-i26886-hicache-bench-multiturn-summary.txt",
        ))
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["client"]["format"], "benchmark_summary");
}

#[test]
fn verdict_does_not_repeat_its_label() {
    let dir = tempfile::tempdir().expect("tmp");
    let md = dir.path().join("r.md");
    // an SGLang log that holds no scheduler line: only the line that says it serves
    let text_log = dir.path().join("notes.log");
    std::fs::write(
        &text_log,
        b"[2026-05-28 02:59:59] The server is fired up and ready to roll!\n",
    )
    .expect("write");
    let out = bin()
        .arg("diagnose")
        .arg(&text_log)
        .arg("--markdown")
        .arg(&md)
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\nVerdict: No SGLang scheduler lines: none were found in the input.\n"),
        "{text}"
    );
    assert!(
        !text.to_lowercase().contains("scheduler lines: no sglang"),
        "{text}"
    );
    let md = std::fs::read_to_string(&md).expect("md");
    assert!(
        md.contains("**Verdict: No SGLang scheduler lines:** none were found in the input.\n"),
        "{md}"
    );
    // A benchmark-only headline is not split at its inner colon either.
    let text = diagnose_text(&data(
        "real/bench/007-pr2643-v0.4.1post2-dsv3-sharegpt5k.txt",
    ));
    assert!(
        text.contains("\nVerdict: No SGLang scheduler lines: only a benchmark summary of SGLang bench_serving — 5,000 requests succeeded, 2674 output tok/s"),
        "{text}"
    );
    // A headline that names its own verdict keeps it once.
    let text = diagnose_text(&data("real/001-i938-a100-llama13b-queue12k.log"));
    assert!(
        text.contains(
            "\nVerdict: KV-cache bound: token usage ~0.93, ~1010 requests run and ~12279 wait."
        ),
        "{text}"
    );
}

/// Sentence ends in `md` that carry two full stops: `..` (not an ellipsis), `.`.` or `.**.`.
fn doubled_stops(md: &str) -> Vec<String> {
    let b = md.as_bytes();
    let mut found = Vec::new();
    for (i, &c) in b.iter().enumerate() {
        if c != b'.' || i == 0 {
            continue;
        }
        // walk back over closers to the character that ends the text before this '.'
        let mut j = i - 1;
        while j > 0 && matches!(b[j], b'`' | b'*' | b'"' | b'\'') {
            j -= 1;
        }
        let ellipsis = b.get(i + 1) == Some(&b'.') || (j > 0 && b[j - 1] == b'.');
        // `../` in a path is no sentence end
        let path = b.get(i + 1) == Some(&b'/') || (j > 0 && b[j - 1] == b'/');
        if matches!(b[j], b'.' | b'!' | b'?') && !ellipsis && !path {
            found.push(md[i.saturating_sub(40)..(i + 1).min(md.len())].to_string());
        }
    }
    found
}

#[test]
fn markdown_ends_each_sentence_with_one_full_stop() {
    let dir = tempfile::tempdir().expect("tmp");
    let md = dir.path().join("r.md");
    // its recommendation's risk ends with a quoted log line that ends in a full stop
    let out = bin()
        .arg("diagnose")
        .arg(data("real/025-sgl-kernel-npu-pr608-tp-ep-prefix-mtp.log"))
        .arg("--markdown")
        .arg(&md)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&md).expect("md");
    assert!(
        text.contains("watch for `KV cache pool is full. Retract requests.`\n"),
        "{text}"
    );
    assert!(
        text.contains("1. **Lower --schedule-conservativeness (e.g. 0.7), or send max_tokens closer to the real completion lengths**. Gain: more requests admitted while the KV cache has room. Risk: "),
        "{text}"
    );
    assert_eq!(doubled_stops(&text), Vec::<String>::new());
    // and across every real log
    for entry in std::fs::read_dir(data("real")).expect("dir") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("log") {
            continue;
        }
        let out = bin()
            .arg("diagnose")
            .arg(&path)
            .arg("--markdown")
            .arg(&md)
            .output()
            .expect("run");
        if String::from_utf8_lossy(&out.stderr).contains("not an SGLang server log") {
            continue;
        }
        assert_eq!(out.status.code(), Some(0));
        let text = std::fs::read_to_string(&md).expect("md");
        assert_eq!(
            doubled_stops(&text),
            Vec::<String>::new(),
            "{}",
            path.display()
        );
    }
}

#[test]
fn memory_in_the_text_report_is_labelled_gib_like_the_values() {
    // kimi-k25-b2's log: `KV size: 7.60 GB`, `available_gpu_mem=5.16 GB`; SGLang computes both
    // as bytes / 2^30, so they are GiB, and the JSON `_gb` fields hold the same numbers.
    let log = data("scenarios/kimi-k25-b2/server.log");
    let out = bin()
        .arg("diagnose")
        .arg(&log)
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "KV cache 7.60 GiB; free after CUDA graphs 5.16 GiB (SGLang's log prints GiB as \"GB\")"
        ),
        "{text}"
    );
    assert!(!text.contains(" GB;"), "{text}");
    let out = bin()
        .args(["diagnose", "--json"])
        .arg(&log)
        .output()
        .expect("run");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["capacity"]["available_gpu_mem_gb"], 5.16);
    assert_eq!(v["capacity"]["kv_cache_gb"], 7.6);
}

#[test]
fn log_lines_inside_a_binary_are_read_but_called_out() {
    // This binary embeds the sample scenario's log text among its machine code.
    let dir = tempfile::tempdir().expect("tmp");
    let copy = dir.path().join("exe.log");
    std::fs::copy(env!("CARGO_BIN_EXE_throughput-doctor"), &copy).expect("copy");
    let out = bin().arg("diagnose").arg(&copy).output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("exe.log holds binary data ("), "{err}");
    assert!(err.contains("SGLang lines were read anyway"), "{err}");
}

#[test]
fn an_unreachable_server_beside_a_log_is_warned_about_at_once() {
    let out = bin()
        .args(["diagnose", "--server", "http://127.0.0.1:9"])
        .arg(data("real/002-i3909-throughput-steadily-decreases.log"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "warning: server http://127.0.0.1:9: cannot connect to http://127.0.0.1:9/"
        ),
        "{err}"
    );
}

#[test]
fn many_dp_ranks_print_as_one_table_with_their_total() {
    // The PD decode node logs DP0-DP15 of dp_size 32: 16 rows, a total row that says so, and
    // the ranks' spans in one line instead of sixteen.
    let text = diagnose_text(&data("real-long/ascend-dsr1-pd-decode-dp32.log"));
    let total = text
        .lines()
        .find(|l| l.trim_start().starts_with("total (16 of 32 DP ranks)"))
        .unwrap_or_else(|| panic!("no total row:\n{text}"));
    assert!(total.contains("314 (sum of medians)"), "{total}");
    assert!(
        text.contains("16 schedulers (DP0 to DP15): spans"),
        "{text}"
    );
    assert!(!text.contains("DP7: span"), "{text}");
    assert!(
        text.contains("~20 requests run per DP rank (~314 over the 16 of 32 ranks in the log)"),
        "{text}"
    );

    // Five of at least eight ranks (DP0, DP2, DP5, DP6, DP7), one decode line each: the
    // headline's rate is their sum, labelled as one sample per rank; markdown has the row too.
    let dir = std::env::temp_dir().join(format!("td-dp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let md = dir.join("report.md");
    let out = bin()
        .arg("diagnose")
        .arg(data("real/022-pr6081-mtp-dp-attention-8ranks.log"))
        .arg("--markdown")
        .arg(&md)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&md).expect("md");
    assert!(
        text.contains(
            "The 5 DP ranks in the log (of at least 8) generate 820 tok/s (summed over 5 DP ranks, one sample on the sparsest)."
        ),
        "{text}"
    );
    assert!(
        text.contains("| total (5 of at least 8 DP ranks) | 5 + 0 | 40 (sum of medians) |"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A PD prefill instance's log and a decode instance's log are two servers: diagnosed
/// together, their DP ranks were joined as one scheduler each and the first file's limits taken
/// for both, and the verdict changed with the order of the files ("running-request cap bound"
/// one way, "fed by the prefill side" the other). They are named, with the command for each,
/// in one line and exit 1, whatever the order and the output form.
#[test]
fn a_pd_prefill_log_and_a_decode_log_are_not_one_server() {
    let prefill = data("real-long/ascend-dsr1-pd-prefill-dp2.log");
    let decode = data("real-long/ascend-dsr1-pd-decode-dp32.log");
    for (first, second) in [(&prefill, &decode), (&decode, &prefill)] {
        for json in [false, true] {
            let mut cmd = bin();
            cmd.arg("diagnose").arg(first).arg(second);
            if json {
                cmd.arg("--json");
            }
            let out = cmd.env("NO_COLOR", "1").output().expect("run");
            assert_eq!(out.status.code(), Some(1));
            assert!(out.stdout.is_empty());
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            let (p, d) = (prefill.display(), decode.display());
            assert!(
                err.contains(&format!(
                    "the prefill instance ({p}) and the decode instance ({d})"
                )),
                "{err}"
            );
            assert!(
                err.contains(&format!(
                    "`throughput-doctor diagnose {p}` and `throughput-doctor diagnose {d}`"
                )),
                "{err}"
            );
        }
    }
    // each alone is diagnosed as before
    assert!(diagnose_text(&prefill).contains("This is a PD prefill instance"));
    assert!(diagnose_text(&decode).contains("Verdict: PD decode fed by the prefill side"));
}

/// The refusal stays one line a shell can use: names are quoted as shell words, a name with a
/// control character is shown escaped (and no command is offered), an instance of many files
/// is named by its first three and a count; live mode refuses them too.
#[test]
fn the_pd_refusal_names_files_as_a_shell_reads_them() {
    let dir = tempfile::tempdir().expect("tmp");
    let copy = |from: &str, to: &str| {
        let p = dir.path().join(to);
        std::fs::copy(data(from), &p).expect("copy");
        p
    };
    let prefill = copy(
        "real/031-i22877-pd-prefill-prealloc-rising-custom-fmt.log",
        "my prefill.log",
    );
    let decode = copy(
        "real/016-pr30393-hicache-pd-decode-mtp-transfer.log",
        "it's decode.log",
    );
    let newline = copy(
        "real/016-pr30393-hicache-pd-decode-mtp-transfer.log",
        "new\nline.log",
    );
    let refused = |args: &[&std::ffi::OsStr]| {
        let out = bin()
            .current_dir(dir.path())
            .arg("diagnose")
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        err
    };
    let name = |p: &std::path::Path| p.file_name().expect("name").to_owned();
    let err = refused(&[&name(&prefill), &name(&decode)]);
    assert!(
        err.contains(
            "the prefill instance ('my prefill.log') and the decode instance (\"it's decode.log\")"
        ),
        "{err}"
    );
    assert!(
        err.ends_with(
            "`throughput-doctor diagnose 'my prefill.log'` and `throughput-doctor diagnose \"it's decode.log\"`\n"
        ),
        "{err}"
    );
    let err = refused(&[&name(&prefill), &name(&newline)]);
    assert!(
        err.contains("the decode instance (new\\nline.log)"),
        "{err}"
    );
    assert!(!err.contains("`throughput-doctor diagnose"), "{err}");
    // live mode: the same refusal, before any report
    let err = refused(&[
        std::ffi::OsStr::new("--watch"),
        std::ffi::OsStr::new("1s"),
        std::ffi::OsStr::new("--watch-count"),
        std::ffi::OsStr::new("2"),
        &name(&prefill),
        &name(&decode),
    ]);
    assert!(
        err.contains("the prefill instance ('my prefill.log')"),
        "{err}"
    );
    // a directory of five files of each instance
    let many = dir.path().join("many");
    std::fs::create_dir(&many).expect("dir");
    for i in 1..=5 {
        std::fs::copy(&prefill, many.join(format!("p{i}.log"))).expect("copy");
        std::fs::copy(&decode, many.join(format!("d{i}.log"))).expect("copy");
    }
    let err = refused(&[std::ffi::OsStr::new("many")]);
    assert!(
        err.contains(
            "the prefill instance (many/p1.log, many/p2.log, many/p3.log, and 2 more) and the \
             decode instance (many/d1.log, many/d2.log, many/d3.log, and 2 more)"
        ),
        "{err}"
    );
    assert!(
        err.ends_with("(each instance's files, or a directory of them, in a run of its own)\n"),
        "{err}"
    );
}

/// Live mode follows a directory as the log files it holds (as `diagnose DIR` reads it), and
/// refuses the output flags it does not write (they were silently ignored).
#[test]
fn live_mode_follows_a_directory_and_refuses_outputs_it_does_not_write() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::copy(
        data("real/016-pr30393-hicache-pd-decode-mtp-transfer.log"),
        dir.path().join("server.log"),
    )
    .expect("copy");
    let out = bin()
        .args(["diagnose", "--watch", "1s", "--watch-count", "1"])
        .arg(dir.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("server.log: 5 lines, 4 decode, 0 prefill, 0 malformed"),
        "{text}"
    );
    for flag in [
        &["--json"][..],
        &["--markdown", "out.md"],
        &["--plot", "t.svg"],
    ] {
        let out = bin()
            .current_dir(dir.path())
            .args([
                "diagnose",
                "--watch",
                "1s",
                "--watch-count",
                "1",
                "server.log",
            ])
            .args(flag)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("cannot be used with"), "{flag:?}: {err}");
        assert!(!dir.path().join("out.md").exists() && !dir.path().join("t.svg").exists());
    }
}

/// Two decode runs one after the other (each log opening with its own startup lines) were
/// joined as rotated parts, and the verdict followed the order of the files ("PD decode fed by
/// the prefill side" one way, "running-request cap bound" the other): they are refused
/// together, the same way in both orders.
#[test]
fn two_runs_one_after_the_other_are_not_one_log() {
    let early = data("real-long/ascend-dsr1-pd-decode-maxrun2-queued.log");
    let late = data("real-long/ascend-dsr1-pd-decode-dp32.log");
    let mut errs = Vec::new();
    for (a, b) in [(&early, &late), (&late, &early)] {
        let out = bin()
            .arg("diagnose")
            .arg(a)
            .arg(b)
            .env("NO_COLOR", "1")
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        errs.push(err);
    }
    assert_eq!(errs[0], errs[1]);
    let (e, l) = (early.display(), late.display());
    assert!(
        errs[0].starts_with(&format!(
            "error: {l} opens with a server's startup lines and its batch lines begin after those of {e} end"
        )),
        "{}",
        errs[0]
    );
    assert!(
        errs[0].ends_with(&format!(
            "`throughput-doctor diagnose {e}` and `throughput-doctor diagnose {l}`\n"
        )),
        "{}",
        errs[0]
    );
}

/// A job directory that holds the client's progress log beside the server's: it is recognised
/// by its content and used as `--client-log`, and stderr says which role each file took.
#[test]
fn a_client_progress_log_in_a_directory_is_used_as_the_client() {
    let dir = tempfile::tempdir().expect("tmp");
    for f in ["server.log", "client.log"] {
        std::fs::copy(
            data(&format!("scenarios/kimi-k25-b2/{f}")),
            dir.path().join(f),
        )
        .expect("copy");
    }
    let out = bin()
        .arg("diagnose")
        .arg(dir.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let client = dir.path().join("client.log");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "note: {}: read {} as the server log, {} as --client-log",
            dir.path().display(),
            dir.path().join("server.log").display(),
            client.display()
        )),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // the same report as naming the two files
    let named = diagnose_args_text(&[
        dir.path().join("server.log").as_os_str(),
        "--client-log".as_ref(),
        client.as_os_str(),
    ]);
    assert_eq!(text, named);
    assert!(
        text.contains("client rate over the steady window"),
        "{text}"
    );
}

/// The founding case's folder, every file a user has, gives the report of naming each file
/// (`diagnose tests/data/scenarios/kimi-k25-b2-early/`).
#[test]
fn the_founding_case_folder_reads_as_its_files_named() {
    let d = data("scenarios/kimi-k25-b2-early");
    let folder = diagnose_args_text(&[d.as_os_str(), "--expect".as_ref(), "4x".as_ref()]);
    let f = |n: &str| d.join(n).into_os_string();
    let named = diagnose_args_text(&[
        f("server.log").as_os_str(),
        "--client-log".as_ref(),
        f("client.log").as_os_str(),
        "--gpu-snapshot".as_ref(),
        f("nvidia-smi.csv").as_os_str(),
        "--model-config".as_ref(),
        f("config.json").as_os_str(),
        "--server-info".as_ref(),
        f("server_info.json").as_os_str(),
        "--client-records".as_ref(),
        f("responses.jsonl").as_os_str(),
        "--expect".as_ref(),
        "4x".as_ref(),
    ]);
    assert_eq!(folder, named);
    assert!(
        folder.contains("  1. Set --mem-fraction-static 0.88\n"),
        "{folder}"
    );
}

/// A log of half the server's DP ranks beside the benchmark that loaded the whole server:
/// the server-side request rate covers the ranks in the log, and says so where it stands
/// beside the client's (8.9 against 5.1 req/s had no word of why).
#[test]
fn the_server_side_client_rate_says_which_ranks_it_covers() {
    let text = diagnose_args_text(&[
        data("real-long/ascend-dsr1-pd-decode-dp32.log").as_os_str(),
        "--client-log".as_ref(),
        data("real-long/ascend-dsr1-pd-client-router.log").as_os_str(),
    ]);
    assert!(
        text.contains(
            "implied by server tokens 5.125 req/s (95% interval 5.001-5.249) over 4.9 min (from the 16 of the server's 32 DP ranks in the log: the whole server about 2.0x)"
        ),
        "{text}"
    );
    // half the ranks' tokens are not the whole server's: no claim that the client overcounts
    assert!(!text.contains("The benchmark counts ~"), "{text}");
}

/// bench_serving against a server that generated ~259 tokens per completed request while the
/// client counts the 512 it asked for (`clients/README.md`): the tokens disagree, and the
/// Answer reads the client's own 2.147 req/s as its rate now, not the 1.08 its tokens imply.
#[test]
fn a_benchmark_that_counts_tokens_the_server_did_not_generate() {
    let text = diagnose_args_text(&[
        data("clients/sglang-bench-serving-0.5.23/server.log").as_os_str(),
        "--client-log".as_ref(),
        data("clients/sglang-bench-serving-0.5.23/bench_serving.console.txt").as_os_str(),
        "--expect".as_ref(),
        "2x".as_ref(),
    ]);
    assert!(
        text.contains("The benchmark counts ~512 output tokens per request; the server generated ~259 per completed request"),
        "{text}"
    );
    assert!(
        text.contains("2.0x the 2.147 req/s the client really completes now"),
        "{text}"
    );
    // the queueing finding does not call the overcounted 1099 tok/s what the requests achieve
    assert!(
        text.contains("Its output throughput counts tokens the server did not generate"),
        "{text}"
    );
    assert!(
        !text.contains("is what the admitted requests achieve"),
        "{text}"
    );
}

/// A client printout without a date at the start of its lines (what the fresh-user trial of
/// 2026-12-03 printed first) is refused with what is missing, not with the line's own form;
/// the same line with the date in brackets is read.
#[test]
fn a_printout_without_a_date_says_the_date_is_missing() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = data("scenarios/kimi-k25-b2-early").join("server.log");
    let run = |line: &str| {
        let f = dir.path().join("client.txt");
        std::fs::write(&f, line).expect("write");
        bin()
            .arg("diagnose")
            .arg(&log)
            .arg("--client-log")
            .arg(&f)
            .output()
            .expect("run")
    };
    let out = run("129/11000 done, 0.1 req/s, 500 tok/s\n");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 1 counts completed requests")
            && err.contains("does not start with a date and time"),
        "{err}"
    );
    let out = run(
        "[2026-02-10 14:14:30] 129/11000 done, 0.1 req/s, 500 tok/s\n[2026-02-10 14:15:30] 135/11000 done, 0.1 req/s, 500 tok/s\n",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A client's progress log given as the server log is refused naming the option that takes it.
#[test]
fn a_client_progress_log_given_as_the_log_names_its_option() {
    let out = bin()
        .arg("diagnose")
        .arg(data("scenarios/kimi-k25-b2-early").join("client.log"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is a client's progress log") && err.contains("pass it as --client-log FILE"),
        "{err}"
    );
}

/// Fresh user's reading: a server log or another tool's file under `--client-log` said only
/// "none of its lines is a client record"; it now says what the file is and where it goes.
#[test]
fn a_file_under_the_wrong_client_option_is_named() {
    let log = data("real-long/rtx4090-qwen3-4b-kv-retraction.log");
    let out = bin()
        .arg("diagnose")
        .arg(&log)
        .arg("--client-log")
        .arg(&log)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("It is an SGLang server log: give it as the LOG argument"),
        "{err}"
    );
    // AIPerf's server-metrics export holds no request's results: named as such (its console
    // summary, refused here before issue 32, is now read as the client's run summary)
    let metrics = data("clients/aiperf-0.13.0/server_metrics_export.csv");
    let out = bin()
        .arg("diagnose")
        .arg(&log)
        .arg("--client-log")
        .arg(&metrics)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("it is AIPerf's server-metrics export")
            && err.contains("holds no request's results"),
        "{err}"
    );
    let console = data("clients/aiperf-0.13.0/profile_export_console.txt");
    let out = bin()
        .arg("diagnose")
        .arg(&log)
        .arg("--client-log")
        .arg(&console)
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("(NVIDIA AIPerf)"), "{report}");
}

/// GuideLLM's report beside its server log (issue 32): its requests are the client's records,
/// its benchmark a run summary with GuideLLM's own figures, and the client view sets the two
/// side by side and says which benchmark the records are.
#[test]
fn guidellm_report_beside_its_log_gives_records_summary_and_their_check() {
    let out = bin()
        .arg("diagnose")
        .arg(data("clients/guidellm-0.8.1/server.log"))
        .arg("--client-records")
        .arg(data("clients/guidellm-0.8.1/benchmarks.trimmed.json"))
        .arg("--json")
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let run = &v["benchmark_runs"][0]["summary"];
    assert_eq!(run["client"], "guidellm");
    assert_eq!(run["label"], "concurrent@64");
    assert_eq!(run["cancelled_requests"], 64);
    assert!((run["output_tok_per_s"].as_f64().expect("tok/s") - 655.63).abs() < 0.01);
    let client = &v["client"];
    assert_eq!(client["records_of"], "benchmark 1 of 1, concurrent@64");
    let claims = client["claims"].as_array().expect("claims");
    let completed = claims
        .iter()
        .find(|c| c["figure"] == "completed_requests")
        .expect("completed");
    // the cut-down report holds 5 of the 223 requests: the check says they disagree
    assert_eq!(
        (
            completed["claimed"].as_f64(),
            completed["from_records"].as_f64()
        ),
        (Some(223.0), Some(5.0))
    );
    assert_eq!(completed["agrees"], false);
}

/// The founding case's client printout alone, no server log (the fresh user's try): the
/// verdict says no server log was given, not that a log held no scheduler lines; the
/// client's view is still reported.
#[test]
fn a_client_log_alone_says_no_server_log_was_given() {
    let d = data("scenarios/kimi-k25-b2-early");
    let client = d.join("client.log").into_os_string();
    let text = diagnose_args_text(&["--client-log".as_ref(), client.as_os_str()]);
    assert!(
        text.contains("Verdict: No SGLang scheduler lines: no server log was given"),
        "{text}"
    );
    assert!(!text.contains("none were found in the input"), "{text}");
}

/// A copy of a log taken while the server writes it ends inside a line (the fresh-user trial
/// of 2026-12-04: the scenario's last decode line cut at `gen throughput (token/s): 7` of
/// `776.84`). That line is set aside as malformed and named, and the verdict and the best
/// change are the whole log's; read as a reading, its 7 tok/s at 47 running threw the step-time
/// fit and the best change became a smaller pool (`mem_fraction_static 0.83`, "+621%").
#[test]
fn a_log_cut_inside_its_last_line_sets_that_line_aside() {
    let dir = tempfile::tempdir().expect("tmp");
    let whole = std::fs::read_to_string(data("scenarios/kimi-k25-b2-early").join("server.log"))
        .expect("read");
    let cut_at = whole.rfind("(token/s): ").expect("a decode line") + "(token/s): 7".len();
    let cut = dir.path().join("cut.log");
    std::fs::write(&cut, &whole[..cut_at]).expect("write");
    let text = diagnose_text(&cut);
    assert!(
        text.contains("cut.log:878: the input ends inside this batch line")
            && text.contains("1 malformed"),
        "{text}"
    );
    let answer = text
        .lines()
        .find(|l| l.starts_with("Answer:"))
        .expect("an answer");
    assert!(
        answer.contains("the best change that fits, mem_fraction_static 0.88"),
        "{answer}"
    );
    assert!(!text.contains("--mem-fraction-static 0.83"), "{text}");
    // the same reading on a whole line (a wild 7 tok/s at 47 running) still throws the fit,
    // but a smaller pool is never offered for it
    let wild = dir.path().join("wild.log");
    let rest = &whole[cut_at + 5..];
    std::fs::write(&wild, format!("{}{rest}", &whole[..cut_at])).expect("write");
    let text = diagnose_text(&wild);
    assert!(text.contains("0 malformed"), "{text}");
    // (the what-if table still lists the 0.83 row with the fit's rate)
    let advice = |l: &&str| l.starts_with("Answer:") || l.contains(". Set --mem-fraction-static");
    assert!(
        text.lines().filter(advice).all(|l| !l.contains("0.83")),
        "{text}"
    );
    // the whole log (its last line ends in a newline) gives the same answer
    let full = diagnose_text(&data("scenarios/kimi-k25-b2-early").join("server.log"));
    assert!(
        full.contains("the best change that fits, mem_fraction_static 0.88"),
        "{full}"
    );
}

/// `--client-log -` reads what the client printed from standard input (the fresh users'
/// trials of 2026-12-03 and -04 piped it in and got "No such file or directory"): the same
/// report as from the file; standard input given twice is refused before any work.
#[test]
fn a_client_printout_piped_in_is_read_from_standard_input() {
    use std::io::Write as _;
    let d = data("scenarios/kimi-k25-b2-early");
    let printout = std::fs::read(d.join("client.log")).expect("read");
    let piped = |log: &Path| {
        let mut child = bin()
            .arg("diagnose")
            .arg(log)
            .args(["--client-log", "-"])
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        // a refused run may exit before it reads: a broken pipe is its answer, not an error
        let _ = child.stdin.take().expect("stdin").write_all(&printout);
        child.wait_with_output().expect("wait")
    };
    let out = piped(&d.join("server.log"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_file = diagnose_args_text(&[
        d.join("server.log").as_os_str(),
        "--client-log".as_ref(),
        d.join("client.log").as_os_str(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    // the client's steady rate, as from the file
    assert!(
        text.contains("0.171 req/s") && from_file.contains("0.171 req/s"),
        "{text}"
    );
    assert_eq!(
        text.lines().find(|l| l.starts_with("Answer:")),
        from_file.lines().find(|l| l.starts_with("Answer:"))
    );
    let out = piped(Path::new("-"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("standard input (-) is given 2 times"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // a side file from standard input counts too (it would leave the client log nothing)
    let out = bin()
        .arg("diagnose")
        .arg(d.join("server.log"))
        .args(["--client-log", "-", "--server-info", "-"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("standard input (-) is given 2 times"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
