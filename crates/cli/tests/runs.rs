//! A log of two server runs, as a user sees it: the text report says so near the top, with a
//! line per run, and `--json` carries the typed list; a log of one run has neither.

use std::path::{Path, PathBuf};
use std::process::Command;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

/// `throughput-doctor diagnose FILE [--json]` with colour off: stdout (the run must exit 0).
fn diagnose(file: &Path, json: bool) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_throughput-doctor"));
    cmd.arg("diagnose").arg(file).env("NO_COLOR", "1");
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_restart_in_one_log_is_reported_run_by_run() {
    let b1 = std::fs::read(data("scenarios/kimi-k25-b1/server.log")).expect("b1");
    let b2 = std::fs::read(data("scenarios/kimi-k25-b2/server.log")).expect("b2");
    let b1_lines = b1.iter().filter(|&&c| c == b'\n').count();
    let dir = tempfile::tempdir().expect("tmp");
    let both = dir.path().join("server.log");
    std::fs::write(&both, [&b1[..], &b2[..]].concat()).expect("write");

    let text = diagnose(&both, false);
    let at = text.find("This log holds 2 server runs").expect(&text);
    // near the top: before the recommendations and findings
    assert!(
        text.find("Recommendations").is_none_or(|r| at < r),
        "{text}"
    );
    assert!(text.find("Findings").is_none_or(|f| at < f), "{text}");
    assert!(
        text.contains(&format!("Run 1, {}:1-{b1_lines}", both.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("Run 2, {}:{}-", both.display(), b1_lines + 1)),
        "{text}"
    );

    let json: serde_json::Value = serde_json::from_str(&diagnose(&both, true)).expect("json");
    let runs = &json["runs"];
    assert_eq!(runs["count"], 2);
    assert_eq!(runs["runs"][0]["last"]["line"], b1_lines as u64);
    assert_eq!(runs["runs"][1]["first"]["line"], b1_lines as u64 + 1);
    assert_eq!(runs["runs"][1]["begins"]["kind"], "step_back");
    assert_eq!(runs["runs"][1]["diagnosed"], true);
    assert_eq!(runs["runs"][1]["bottleneck"], json["bottleneck"]);

    // one run: no runs section, no `runs` key
    let one = data("scenarios/kimi-k25-b2/server.log");
    assert!(!diagnose(&one, false).contains("server runs"));
    let json: serde_json::Value = serde_json::from_str(&diagnose(&one, true)).expect("json");
    assert!(json.get("runs").is_none());
}
