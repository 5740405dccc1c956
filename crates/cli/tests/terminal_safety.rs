//! Terminal safety (issue 30, item 24): control characters in file names reach neither the
//! text report nor the warnings and errors on stderr raw. Before: a log named
//! `x ESC[2J NEWLINE Verdict: all good` cleared the screen and printed a fake verdict line.

use std::path::Path;
use std::process::Command;

const EVIL: &str = "x\u{1b}[2J\nVerdict: all good\r";

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_throughput-doctor"));
    c.env_remove("SGLANG_API_KEY").env("NO_COLOR", "1");
    c
}

fn assert_safe(what: &str, text: &str) {
    assert!(!text.contains(['\u{1b}', '\r']), "{what}: {text:?}");
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("Verdict: all good")),
        "{what}: a fake line: {text}"
    );
}

#[test]
fn control_characters_in_file_names_are_escaped_in_the_report_and_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let real = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real/002-i3909-throughput-steadily-decreases.log");
    let log = dir.path().join(format!("{EVIL}.log"));
    std::fs::copy(&real, &log).unwrap();
    // The text report names the log among its inputs.
    let o = bin().arg("diagnose").arg(&log).output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{err}");
    assert_safe("stdout", &out);
    assert_safe("stderr", &err);
    assert!(
        out.contains("x\\u{1b}[2J\\u{a}Verdict: all good\\u{d}.log"),
        "{out}"
    );
    // And in Markdown on stdout.
    let o = bin()
        .arg("diagnose")
        .arg(&log)
        .args(["--markdown", "-"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&o.stdout);
    assert_safe("markdown", &md);
    assert!(md.contains("Verdict: all good"), "{md}");
    // A warning (a GPU snapshot that is not understood) and an error (a missing file) on stderr.
    let snap = dir.path().join(format!("{EVIL}.csv"));
    std::fs::write(&snap, "not a snapshot\n").unwrap();
    let o = bin()
        .arg("diagnose")
        .arg(&log)
        .arg("--gpu-snapshot")
        .arg(&snap)
        .output()
        .unwrap();
    assert_safe("warning", &String::from_utf8_lossy(&o.stderr));
    assert_safe("stdout with a warning", &String::from_utf8_lossy(&o.stdout));
    let o = bin()
        .arg("diagnose")
        .arg(dir.path().join(format!("{EVIL}-missing.log")))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_safe("error", &err);
    assert!(err.contains("\\u{1b}"), "{err}");
    // A GPU snapshot's path in `gpu --snapshot`'s text.
    let smi = dir.path().join(format!("{EVIL}.csv"));
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/scenarios/kimi-k25-b2-early/nvidia-smi.csv"),
        &smi,
    )
    .unwrap();
    let o = bin()
        .arg("gpu")
        .arg("--snapshot")
        .arg(&smi)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_safe("gpu", &out);
    assert!(out.contains("\\u{1b}"), "{out}");
}
