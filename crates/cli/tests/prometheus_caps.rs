//! Issue 30 (hardening, round 3), section C item 17: `diagnose --prometheus` against a
//! Prometheus that stalls or answers too much. A stalled range query took its 60 s, six at a
//! time, with no deadline over them (1,000 instances: about 2.8 hours), then exit 0 with
//! "0 instance(s)". Each test performs the attack with a fake Prometheus on loopback and runs
//! the binary under a deadline of its own.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How the fake answers a range query of one instance: `Some(data)` (the `result` list of a
/// matrix), or `None`: never (the connection is held open).
type RangeAnswer = fn(&str) -> Option<String>;

/// Reads one request; returns its path and form body.
fn read_request(s: &mut TcpStream) -> Option<(String, String)> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = s.read(&mut tmp).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = s.read(&mut tmp).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&tmp[..n]);
    }
    let path = head.split_whitespace().nth(1)?.to_string();
    let body = String::from_utf8_lossy(&buf[head_end..head_end + len]).to_string();
    Some((path, body))
}

fn answer(s: &mut TcpStream, json: &str) {
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{json}",
        json.len()
    );
}

/// A fake Prometheus on loopback: `instances` instances `h:0`, `h:1`, ... found by the
/// `group by (instance)` query, no pool sizes, and each range query answered by `range`.
fn fake_prometheus(instances: usize, range: RangeAnswer) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let Some((path, body)) = read_request(&mut s) else {
                    return;
                };
                let vector = |items: Vec<String>| {
                    format!(
                        r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#,
                        items.join(",")
                    )
                };
                match path.as_str() {
                    "/api/v1/query" if body.contains("group+by") => {
                        let items = (0..instances)
                            .map(|i| {
                                format!(r#"{{"metric":{{"instance":"h:{i}"}},"value":[1,"1"]}}"#)
                            })
                            .collect();
                        answer(&mut s, &vector(items));
                    }
                    "/api/v1/query" => answer(&mut s, &vector(Vec::new())),
                    "/api/v1/query_range" => {
                        // instance="h:N", form-encoded
                        let inst = body
                            .split("instance%3D%22")
                            .nth(1)
                            .and_then(|r| r.split("%22").next())
                            .unwrap_or("")
                            .replace("%3A", ":");
                        match range(&inst) {
                            Some(result) => answer(
                                &mut s,
                                &format!(
                                    r#"{{"status":"success","data":{{"resultType":"matrix","result":[{result}]}}}}"#
                                ),
                            ),
                            // a stalled query: the connection stays open, nothing is sent
                            None => std::thread::sleep(Duration::from_secs(3600)),
                        }
                    }
                    _ => answer(
                        &mut s,
                        r#"{"status":"error","errorType":"bad_data","error":"?"}"#,
                    ),
                }
            });
        }
    });
    format!("http://{addr}")
}

/// Runs the binary with `args` to its end, or kills it after `limit` (then `None`).
fn doctor_within(args: &[&str], limit: Duration) -> Option<Output> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_throughput-doctor"))
        .args(args)
        .env("NO_COLOR", "1")
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

/// 1,000 instances whose range queries never answer: the read ends at `--timeout 2s`, names
/// how many were not read, and exits 1 (none could be read).
#[test]
fn stalled_range_queries_end_at_the_timeout_and_exit_1() {
    let url = fake_prometheus(1_000, |_| None);
    let out = doctor_within(
        &["diagnose", "--prometheus", &url, "--timeout", "2s"],
        Duration::from_secs(60),
    )
    .expect("diagnose --prometheus ended within 60 s");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "--prometheus {url}: none of the 1000 instance(s) could be read (1 problem(s); first: 1000 of 1000 instance(s) not read: --timeout 2 s passed (h:0, h:1, h:10, h:100, h:101, …))"
        )),
        "{err}"
    );
}

/// One instance answers, 999 stall: the one is diagnosed, the others are named as not read
/// by the deadline, and the exit is 0.
#[test]
fn what_the_deadline_leaves_unread_is_named_and_the_rest_reported() {
    let url = fake_prometheus(1_000, |inst| (inst == "h:0").then(String::new));
    let out = doctor_within(
        &[
            "diagnose",
            "--prometheus",
            &url,
            "--timeout",
            "3s",
            "--json",
        ],
        Duration::from_secs(60),
    )
    .expect("diagnose --prometheus ended within 60 s");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let names: Vec<&str> = v["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["instance"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["h:0"]);
    assert_eq!(
        v["problems"],
        serde_json::json!([
            "999 of 1000 instance(s) not read: --timeout 3 s passed (h:1, h:10, h:100, h:101, h:102, …)"
        ])
    );
}

/// A range answer of 10,001 series for each instance: each is named with the cap, and with
/// no instance read the exit is 1.
#[test]
fn a_range_answer_past_the_series_cap_is_named() {
    fn many(inst: &str) -> Option<String> {
        Some(
            (0..10_001)
                .map(|r| {
                    format!(
                        r#"{{"metric":{{"__name__":"sglang:num_running_reqs","instance":"{inst}","dp_rank":"{r}"}},"values":[[1,"1"]]}}"#
                    )
                })
                .collect::<Vec<_>>()
                .join(","),
        )
    }
    let url = fake_prometheus(2, many);
    let out = doctor_within(
        &["diagnose", "--prometheus", &url],
        Duration::from_secs(120),
    )
    .expect("diagnose --prometheus ended");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "none of the 2 instance(s) could be read (2 problem(s); first: instance h:0: {url}/api/v1/query_range: the answer holds more than 10000 series (the most one query may return); not read: narrow the selector)"
        )),
        "{err}"
    );
}

/// Item 18 on Prometheus' side: an instance scraped by two jobs has each of its series twice,
/// differing by `job`; they are named, not summed into twice the running requests.
#[test]
fn series_of_two_jobs_are_named_not_summed() {
    fn two_jobs(inst: &str) -> Option<String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let pts = (0..20)
            .map(|k| format!(r#"[{},"8"]"#, now - 300.0 + 15.0 * f64::from(k)))
            .collect::<Vec<_>>()
            .join(",");
        Some(
            ["a", "b"]
                .iter()
                .map(|job| {
                    format!(
                        r#"{{"metric":{{"__name__":"sglang:num_running_reqs","instance":"{inst}","job":"{job}"}},"values":[{pts}]}}"#
                    )
                })
                .collect::<Vec<_>>()
                .join(","),
        )
    }
    let url = fake_prometheus(1, two_jobs);
    let out = doctor_within(
        &["diagnose", "--prometheus", &url, "--json"],
        Duration::from_secs(120),
    )
    .expect("diagnose --prometheus ended");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        v["problems"],
        serde_json::json!([
            "instance h:0: sglang:num_running_reqs: its 2 series differ by label \"job\" (2 values), not only by rank labels (dp_rank, tp_rank, pp_rank, moe_ep_rank): not the ranks of one server, so not summed and not used"
        ])
    );
    assert!(
        v["instances"][0]["running_mean"].is_null(),
        "{}",
        v["instances"][0]
    );
}
