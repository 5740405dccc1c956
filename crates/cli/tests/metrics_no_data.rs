//! Issue 13 item 7 end to end: a server whose `/metrics` answers 200 with an HTML page (a
//! proxy's login page) gives no verdict from no data ("client too slow" before): the warning
//! names the URL and the first bad line, and the report has no scheduler to judge.

use std::io::{Read, Write};

#[test]
fn an_html_metrics_page_is_no_data_not_a_verdict() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]);
            let body = if req.starts_with("GET /metrics") {
                "<html>\n<head><title>Sign in</title></head>\n<body>proxy login</body>\n</html>\n"
            } else {
                r#"{"version": "0.5.8", "max_total_num_tokens": 24000, "max_running_requests": 64}"#
            };
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_throughput-doctor"))
        .args([
            "diagnose",
            "--server",
            &format!("http://{addr}"),
            "--metrics-polls",
            "1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "http://{addr}/metrics holds no SGLang metrics (4 lines, 4 unreadable; first: line 1: bad metric name"
        )),
        "{stderr}"
    );
    assert!(
        !stdout.to_lowercase().contains("client too slow"),
        "{stdout}"
    );
    assert!(stdout.contains("holds no SGLang metrics"), "{stdout}");
}
