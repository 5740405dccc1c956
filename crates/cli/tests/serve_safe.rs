//! `serve` on a network (issue 30, items 8-12), each attack performed on loopback and bounded
//! in time: a password in the `--server` URL, a bearer token, a target that disappears, label
//! values that inject series, a log that blocks (a FIFO), half-open connections (slow-loris).

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sglang_client::exposition::Exposition;
use throughput_doctor_cli::serve::http::NetArgs;
use throughput_doctor_cli::serve::{ServeArgs, ServeHandle, start_with};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn args(servers: Vec<String>, logs: Vec<PathBuf>, interval_ms: u64, window_s: u64) -> ServeArgs {
    ServeArgs {
        listen: "127.0.0.1:0".parse().unwrap(),
        servers,
        logs,
        interval: Duration::from_millis(interval_ms),
        poll: Duration::from_millis(100),
        window: Duration::from_secs(window_s),
    }
}

/// A real log: TP0 of issue 3909 (9 decode lines).
fn real_log() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real/002-i3909-throughput-steadily-decreases.log")
}

/// One HTTP/1.1 GET (closed after); (status, head, body). Bounded by 10 s.
fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, String, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

fn report(addr: SocketAddr, token: Option<&str>) -> serde_json::Value {
    let (status, _, body) = get(addr, "/report.json", token);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Polls `/report.json` until `ok` holds (at most `secs`).
fn wait_for(
    addr: SocketAddr,
    token: Option<&str>,
    secs: u64,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let r = report(addr, token);
        if ok(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "never happened; last: {r:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stop(rt: tokio::runtime::Runtime, h: ServeHandle) {
    rt.block_on(h.shutdown());
    rt.shutdown_timeout(Duration::from_secs(1));
}

/// Item 8. Before: `/report.json` carried `http://admin:PASSWORD@…` in 5-6 places, open to
/// anyone. After: no trace of the password in either body, the URL shown without credentials,
/// and with `--auth-token-file` both routes answer 401 without the bearer token.
#[test]
fn the_server_password_is_never_published_and_a_token_guards_both_routes() {
    let rt = runtime();
    let sim = rt
        .block_on(sglang_sim::spawn(sglang_sim::SimConfig::kv_bound()))
        .unwrap();
    let password = "hunter2-long-secret";
    let url = sim
        .base_url()
        .replace("http://", &format!("http://admin:{password}@"));
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-scrape-token\n").unwrap();
    let net = NetArgs {
        auth_token_file: Some(token_file),
        ..NetArgs::default()
    };
    let h = rt
        .block_on(start_with(&args(vec![url], Vec::new(), 300, 600), &net))
        .unwrap();
    let token = Some("s3cret-scrape-token");
    let r = wait_for(h.addr, token, 30, |r| r["diagnoses"].as_u64() > Some(0));
    let body = serde_json::to_string(&r).unwrap();
    assert!(
        !body.contains(password) && !body.contains("admin:"),
        "{body}"
    );
    assert!(
        body.contains(&sim.base_url()),
        "the source is shown without credentials: {body}"
    );
    let (status, _, metrics) = get(h.addr, "/metrics", token);
    assert_eq!(status, 200);
    assert!(!metrics.contains(password), "{metrics}");
    for path in ["/metrics", "/report.json"] {
        for bad in [None, Some("wrong-token"), Some("s3cret-scrape-toke")] {
            let (status, head, body) = get(h.addr, path, bad);
            assert_eq!(status, 401, "{path} {bad:?}: {head}");
            assert!(!body.contains("kv_cache_bound") && !body.contains(password));
        }
    }
    stop(rt, h);
}

/// Item 21 (serve). Before: a server that echoed the URL's password base64-encoded or
/// `\u`-escaped in its error body had it published in `/report.json` (the target's error).
/// After: every form is `<redacted>`.
#[test]
fn an_encoded_password_echoed_by_a_server_is_not_published() {
    use base64::Engine as _;
    let password = "hunter2-long-secret";
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("admin:{password}"));
    let uni: String = password
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    let body = format!("{{\"detail\":\"bad credentials [{b64}] [{uni}]\"}}");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let rt = runtime();
    let url = format!("http://admin:{password}@127.0.0.1:{port}");
    let h = rt
        .block_on(start_with(
            &args(vec![url], Vec::new(), 200, 60),
            &NetArgs::default(),
        ))
        .unwrap();
    let inst = format!("127.0.0.1:{port}");
    let r = wait_for(h.addr, None, 10, |r| {
        r["targets"][&inst]["error"].is_string()
    });
    let text = serde_json::to_string(&r).unwrap();
    let err = r["targets"][&inst]["error"].as_str().unwrap();
    assert!(
        err.contains("bad credentials [<redacted>] [<redacted>]"),
        "{err}"
    );
    for form in [password, b64.as_str(), uni.as_str(), "\\u0068\\u0075"] {
        assert!(!text.contains(form), "{form}: {text}");
    }
    stop(rt, h);
}

/// Item 12. Before: a log path holding `"` and a newline ended its label value early and
/// injected a `throughput_doctor_bottleneck` series of its own, served as `text/plain;
/// version=0.0.4` though the body is OpenMetrics. After: the value is escaped, the text reads
/// back whole with the path intact, and the content type is OpenMetrics'.
#[test]
fn label_values_are_escaped_and_the_body_is_served_as_openmetrics() {
    let rt = runtime();
    let evil = "/nonexistent/x\"} 1\nthroughput_doctor_bottleneck{instance=\"victim:1\",kind=\"kv_cache_bound\"} 1\n# \\";
    let h = rt
        .block_on(start_with(
            &args(Vec::new(), vec![PathBuf::from(evil)], 200, 60),
            &NetArgs::default(),
        ))
        .unwrap();
    wait_for(h.addr, None, 10, |r| {
        r["targets"].as_object().is_some_and(|t| !t.is_empty())
    });
    let (status, head, text) = get(h.addr, "/metrics", None);
    assert_eq!(status, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    let e = Exposition::parse(&text);
    assert!(e.problems.is_empty(), "{:?}\n{text}", e.problems);
    let name = |s: &sglang_client::exposition::Sample| e.families[s.family].name.clone();
    assert!(
        !e.samples.iter().any(|s| name(s).ends_with("bottleneck")),
        "an injected series: {text}"
    );
    let up: Vec<_> = e
        .samples
        .iter()
        .filter(|s| name(s).ends_with("target_up"))
        .collect();
    assert_eq!(up.len(), 1, "{text}");
    assert_eq!(up[0].label("instance"), Some(evil));
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    stop(rt, h);
}

/// Item 9. Before: a server that went away kept its verdict, findings and rate with a fresh
/// `last_diagnosis_timestamp_seconds` forever (its samples aged out only on a successful poll).
/// After: it is down with its reason, publishes no verdict and no rate, and its last diagnosis
/// time stops.
#[test]
fn a_target_that_disappears_publishes_no_verdict() {
    let rt = runtime();
    let sim = rt
        .block_on(sglang_sim::spawn(sglang_sim::SimConfig::kv_bound()))
        .unwrap();
    let h = rt
        .block_on(start_with(
            &args(vec![sim.base_url()], Vec::new(), 200, 2),
            &NetArgs::default(),
        ))
        .unwrap();
    let inst = sim.base_url().replace("http://", "");
    wait_for(h.addr, None, 30, |r| {
        !r["targets"][&inst]["report"].is_null()
    });
    rt.block_on(sim.shutdown());
    let r = wait_for(h.addr, None, 10, |r| r["targets"][&inst]["up"] == false);
    let at = r["targets"][&inst]["diagnosed_at"].clone();
    // Past the window: every sample has aged out, and nothing was diagnosed again.
    std::thread::sleep(Duration::from_millis(2500));
    let r = report(h.addr, None);
    let t = &r["targets"][&inst];
    assert_eq!(t["up"], false, "{t:#}");
    assert!(t["report"].is_null(), "a dead target's verdict: {t:#}");
    assert!(t["error"].is_string(), "{t:#}");
    assert_eq!(t["samples"], 0, "{t:#}");
    assert_eq!(t["diagnosed_at"], at, "a fresh timestamp on a dead target");
    let (_, _, text) = get(h.addr, "/metrics", None);
    for series in [
        "throughput_doctor_bottleneck{",
        "throughput_doctor_finding{",
        "throughput_doctor_steady_gen_throughput_tokens_per_second{",
    ] {
        assert!(!text.contains(series), "{series} still published:\n{text}");
    }
    assert!(text.contains(&format!(
        "throughput_doctor_target_up{{instance=\"{inst}\"}} 0"
    )));
    stop(rt, h);
}

/// A TCP proxy to `to` that, once `hang` is set, stops forwarding (every connection, old and
/// new, stays open and silent): a server that hangs. Threads end with the test process.
fn hanging_proxy(
    to: SocketAddr,
    hang: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> SocketAddr {
    use std::sync::atomic::Ordering;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let pipe = |mut from: TcpStream,
                mut to: TcpStream,
                hang: std::sync::Arc<std::sync::atomic::AtomicBool>| {
        std::thread::spawn(move || {
            let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
            let mut buf = [0u8; 16 * 1024];
            loop {
                if hang.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                match from.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => {
                        if to.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => return,
                }
            }
        });
    };
    std::thread::spawn(move || {
        for c in listener.incoming().flatten() {
            let Ok(s) = TcpStream::connect(to) else {
                continue;
            };
            pipe(c.try_clone().unwrap(), s.try_clone().unwrap(), hang.clone());
            pipe(s, c, hang.clone());
        }
    });
    addr
}

/// Item 9, a server that hangs (no error for 30 s, no answer either). Before: its samples aged
/// out only on a successful poll, so its verdict stayed. After: past the window it has no
/// samples, no verdict, and is down.
#[test]
fn a_target_that_hangs_loses_its_verdict_when_its_samples_age_out() {
    let rt = runtime();
    let sim = rt
        .block_on(sglang_sim::spawn(sglang_sim::SimConfig::kv_bound()))
        .unwrap();
    let hang = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let proxy = hanging_proxy(sim.addr, hang.clone());
    let h = rt
        .block_on(start_with(
            &args(vec![format!("http://{proxy}")], Vec::new(), 200, 2),
            &NetArgs::default(),
        ))
        .unwrap();
    let inst = proxy.to_string();
    wait_for(h.addr, None, 30, |r| {
        !r["targets"][&inst]["report"].is_null()
    });
    hang.store(true, std::sync::atomic::Ordering::Relaxed);
    let r = wait_for(h.addr, None, 10, |r| r["targets"][&inst]["samples"] == 0);
    let t = &r["targets"][&inst];
    assert_eq!(t["up"], false, "{t:#}");
    assert!(t["report"].is_null(), "{t:#}");
    let (_, _, text) = get(h.addr, "/metrics", None);
    assert!(!text.contains("throughput_doctor_bottleneck{"), "{text}");
    stop(rt, h);
}

/// Item 11. Before: every target was diagnosed in turn on one thread, so a `--log` that blocks
/// (a FIFO with no writer) held up every target: nothing was ever published. After: the other
/// targets are diagnosed on time, and the FIFO is down with the reason.
#[test]
fn a_blocking_log_holds_up_no_other_target() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("blocking.log");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: no mkfifo on this system");
        return;
    }
    let rt = runtime();
    let good = real_log();
    let h = rt
        .block_on(start_with(
            &args(Vec::new(), vec![fifo.clone(), good.clone()], 300, 60),
            &NetArgs::default(),
        ))
        .unwrap();
    let (g, f) = (good.display().to_string(), fifo.display().to_string());
    let r = wait_for(h.addr, None, 10, |r| {
        !r["targets"][&g]["report"].is_null() && r["targets"][&f]["error"].is_string()
    });
    assert_eq!(r["targets"][&g]["up"], true, "{r:#}");
    assert_eq!(r["targets"][&f]["up"], false, "{r:#}");
    let why = r["targets"][&f]["error"].as_str().unwrap();
    assert!(why.contains("did not finish within"), "{why}");
    // The good log keeps being diagnosed while the FIFO stays blocked.
    let n = r["diagnoses"].as_u64().unwrap();
    wait_for(h.addr, None, 10, |r| r["diagnoses"].as_u64() > Some(n + 1));
    // Release the blocked reader (a writer opens and closes the FIFO), then stop.
    drop(std::fs::OpenOptions::new().write(true).open(&fifo));
    stop(rt, h);
}

/// Item 10. Before: every half-open connection (a request head never finished) was accepted
/// and held with no deadline: 20,000 of them took every file descriptor. After: at most
/// `--max-connections` are held, those past the cap are closed at once, the held ones are
/// closed after `--header-timeout`, and a scrape is answered again.
#[test]
fn half_open_connections_are_capped_and_timed_out() {
    let rt = runtime();
    let net = NetArgs {
        max_connections: 16,
        header_timeout: Duration::from_millis(500),
        ..NetArgs::default()
    };
    let h = rt
        .block_on(start_with(
            &args(Vec::new(), vec![real_log()], 300, 60),
            &net,
        ))
        .unwrap();
    wait_for(h.addr, None, 10, |r| r["diagnoses"].as_u64() > Some(0));
    let mut loris = Vec::new();
    for _ in 0..300 {
        let mut s = TcpStream::connect_timeout(&h.addr, Duration::from_secs(5)).unwrap();
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n");
        loris.push(s);
    }
    // Whether the server still holds a connection: no EOF or reset within the wait.
    let held = |s: &mut TcpStream, wait: Duration| {
        s.set_read_timeout(Some(wait)).unwrap();
        let mut b = [0u8; 64];
        match s.read(&mut b) {
            Ok(0) => false,
            Ok(_) => false,
            Err(e) => matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        }
    };
    std::thread::sleep(Duration::from_millis(100));
    let open = loris
        .iter_mut()
        .map(|s| held(s, Duration::from_millis(5)))
        .filter(|&h| h)
        .count();
    assert!(
        open <= 16,
        "{open} half-open connections held past a cap of 16"
    );
    // Past the header timeout, none is held, and a scrape is answered.
    std::thread::sleep(Duration::from_millis(800));
    let open = loris
        .iter_mut()
        .map(|s| held(s, Duration::from_millis(5)))
        .filter(|&h| h)
        .count();
    assert_eq!(
        open, 0,
        "half-open connections held past the header timeout"
    );
    let (status, _, _) = get(h.addr, "/metrics", None);
    assert_eq!(status, 200);
    stop(rt, h);
}
