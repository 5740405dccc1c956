//! A file given as the server log that is another format's (issue 11, pattern 9): a one-line
//! error naming what it looks like, exit 1; beside SGLang logs in a directory, skipped and
//! said.

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

/// `diagnose FILE`: its exit code and stderr.
fn diagnose(path: &Path) -> (Option<i32>, String) {
    let out = bin().arg("diagnose").arg(path).output().expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_llama_cpp_log_is_named() {
    let p = data("real-2/115-NEGATIVE-llamacpp-pr19408-slot-print-timing.log");
    let (code, err) = diagnose(&p);
    assert_eq!(code, Some(1));
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {}: this looks like a llama.cpp log (9 line(s) in its format, the first at line 1), not an SGLang server log; throughput-doctor reads SGLang server logs",
            p.display()
        )
    );
}

#[test]
fn an_nvidia_smi_paste_points_to_the_gpu_snapshot_flag() {
    for rel in [
        "real/nvidia-smi/001-cubecos-i312-rtx-pro-6000-blackwell-q-memory-perf.txt",
        "real/nvidia-smi/002-trtllm-i10278-b200x8-table.txt",
        "real-2/nvidia-smi/101-marimo-pr6822-gb10-csv-na-and-table-header.txt",
    ] {
        let (code, err) = diagnose(&data(rel));
        assert_eq!(code, Some(1), "{rel}");
        assert!(err.contains("this looks like nvidia-smi output"), "{err}");
        assert!(err.contains("--gpu-snapshot FILE"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

/// A vLLM *benchmark* summary is read as a benchmark, not refused.
#[test]
fn a_vllm_benchmark_summary_is_still_read() {
    let (code, err) = diagnose(&data(
        "real/bench/004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt",
    ));
    assert_eq!(code, Some(0), "{err}");
}

/// A job directory with an SGLang log and a llama.cpp log: the SGLang log is diagnosed, the
/// other file is skipped by name.
#[test]
fn in_a_directory_a_foreign_file_is_skipped_and_named() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::copy(
        data("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log"),
        dir.path().join("server.log"),
    )
    .expect("copy");
    let foreign = dir.path().join("llama.log");
    std::fs::copy(
        data("real-2/115-NEGATIVE-llamacpp-pr19408-slot-print-timing.log"),
        &foreign,
    )
    .expect("copy");
    let out = bin()
        .args(["diagnose", "--json"])
        .arg(dir.path())
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "warning: skipped {}: this looks like a llama.cpp log",
            foreign.display()
        )),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["bottleneck"], "kv_cache_bound");
}
