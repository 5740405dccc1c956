//! Misbehaving servers on loopback (issue 13, items 2 and 11-16): bodies
//! past their caps, streams that stall, answers without `choices`, a server
//! that never answers, an echoed API key, two runs on one output.
//!
//! Each server is a tiny tokio loop on 127.0.0.1 that reads one request
//! head and answers with raw bytes; every loop is bounded (bytes sent,
//! seconds held).

use std::path::Path;
use std::time::Duration;

use sglang_client::batch::{BatchApi, BatchConfig, BatchError, CancelToken, NoProgress, run_batch};
use sglang_client::{ApiKey, ClientConfig, ClientError, SglangClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with each request.
#[derive(Clone)]
enum Mode {
    /// Sends these bytes (a whole HTTP response) and closes.
    Raw(Vec<u8>),
    /// Sends `head` (status line and headers of a chunked response), then
    /// chunks of `chunk` until `total` bytes or the client goes away.
    Chunked {
        head: String,
        chunk: Vec<u8>,
        total: u64,
    },
    /// Sends `prefix`, then holds the connection silent for `hold`.
    Stall { prefix: Vec<u8>, hold: Duration },
    /// The first mode whose path prefix matches the request's path.
    Route(Vec<(&'static str, Mode)>),
}

/// Reads a request head and its body (by Content-Length); returns the head.
async fn read_request(s: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        let n = s.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 1 << 20 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut have = buf.len() - head_end;
    while have < len {
        let n = s.read(&mut tmp).await.ok()?;
        if n == 0 {
            break;
        }
        have += n;
    }
    Some(head)
}

async fn answer(mut s: TcpStream, mode: Mode) {
    let Some(head) = read_request(&mut s).await else {
        return;
    };
    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
    let mode = match mode {
        Mode::Route(routes) => match routes.into_iter().find(|(p, _)| path.starts_with(p)) {
            Some((_, m)) => m,
            None => return,
        },
        m => m,
    };
    match mode {
        Mode::Route(_) => {}
        Mode::Raw(bytes) => {
            let _ = s.write_all(&bytes).await;
            let _ = s.shutdown().await;
        }
        Mode::Chunked { head, chunk, total } => {
            if s.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let mut sent = 0u64;
            let frame = [
                format!("{:x}\r\n", chunk.len()).into_bytes(),
                chunk.clone(),
                b"\r\n".to_vec(),
            ]
            .concat();
            while sent < total {
                if s.write_all(&frame).await.is_err() {
                    return;
                }
                sent += chunk.len() as u64;
            }
            let _ = s.write_all(b"0\r\n\r\n").await;
        }
        Mode::Stall { prefix, hold } => {
            let _ = s.write_all(&prefix).await;
            tokio::time::sleep(hold).await;
        }
    }
}

/// Serves every connection with `mode` (forever, until the test's runtime
/// ends); returns the base URL.
async fn serve(mode: Mode) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            tokio::spawn(answer(s, mode.clone()));
        }
    });
    format!("http://{addr}")
}

fn ok_json(body: &str) -> Mode {
    Mode::Raw(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

fn sse_head() -> String {
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        .into()
}

fn client(url: &str, f: impl FnOnce(&mut ClientConfig)) -> SglangClient {
    let mut cfg = ClientConfig::new(url);
    f(&mut cfg);
    SglangClient::new(cfg).unwrap()
}

#[tokio::test]
async fn a_chunked_server_info_past_the_cap_stops_at_the_cap() {
    // 64 MiB of chunked JSON-ish bytes against a 1 MiB cap.
    let url = serve(Mode::Chunked {
        head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            .into(),
        chunk: vec![b' '; 64 * 1024],
        total: 64 << 20,
    })
    .await;
    let c = client(&url, |c| c.max_info_bytes = 1 << 20);
    let e = c.server_info().await.unwrap_err();
    assert_eq!(e.kind(), "too_large");
    let msg = e.to_string();
    assert_eq!(
        msg,
        format!(
            "{url}/server_info: response body larger than the cap of 1 MiB (stopped reading there)"
        )
    );
}

#[tokio::test]
async fn a_declared_length_past_the_cap_fails_before_reading() {
    // Says 2 GB, sends 10 bytes: refused from the header alone.
    let url = serve(Mode::Raw(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2000000000\r\n\r\n0123456789".to_vec(),
    ))
    .await;
    let c = client(&url, |_| {});
    match c.metrics_text().await.unwrap_err() {
        ClientError::TooLarge {
            url: u,
            limit_bytes,
            what,
        } => {
            assert_eq!(u, format!("{url}/metrics"));
            assert_eq!(limit_bytes, 64 << 20);
            assert_eq!(what, "response body");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_event_without_newline_past_one_mib_is_refused() {
    let url = serve(Mode::Chunked {
        head: sse_head(),
        chunk: [b"data: ".as_slice(), &vec![b'x'; 64 * 1024]].concat(),
        total: 16 << 20,
    })
    .await;
    let c = client(&url, |_| {});
    let mut s = c
        .chat_completions_stream(&serde_json::json!({"stream": true}))
        .await
        .unwrap();
    use futures_util::StreamExt;
    let e = s.next().await.unwrap().unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{url}/v1/chat/completions: server-sent event larger than the cap of 1 MiB (stopped reading there)"
        )
    );
    assert!(s.next().await.is_none());
}

#[tokio::test]
async fn a_stream_that_goes_silent_is_stalled() {
    let first = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n";
    let prefix = format!("{}{:x}\r\n{first}\r\n", sse_head(), first.len());
    let url = serve(Mode::Stall {
        prefix: prefix.into_bytes(),
        hold: Duration::from_secs(30),
    })
    .await;
    let c = client(&url, |c| c.stall_timeout = Duration::from_millis(300));
    let mut s = c
        .chat_completions_stream(&serde_json::json!({"stream": true}))
        .await
        .unwrap();
    use futures_util::StreamExt;
    let chunk = s.next().await.unwrap().unwrap();
    assert_eq!(
        chunk.choices[0].delta.as_ref().unwrap().content.as_deref(),
        Some("Hi")
    );
    let e = s.next().await.unwrap().unwrap_err();
    assert_eq!(e.kind(), "stalled");
    assert!(e.is_retryable());
    assert_eq!(
        e.to_string(),
        format!("{url}/v1/chat/completions: stream stalled: no byte for 0.3 s")
    );
}

fn prompts(dir: &Path, n: usize) -> std::path::PathBuf {
    let p = dir.join("prompts.jsonl");
    let text: String = (0..n)
        .map(|i| format!("{{\"id\": \"q{i}\", \"prompt\": \"hello {i}\"}}\n"))
        .collect();
    std::fs::write(&p, text).unwrap();
    p
}

fn records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn batch_against(
    mode: Mode,
    stream: bool,
    f: impl FnOnce(&mut BatchConfig),
) -> Vec<serde_json::Value> {
    let url = serve(mode).await;
    let dir = tempfile::tempdir().unwrap();
    let input = prompts(dir.path(), 2);
    let out = dir.path().join("out.jsonl");
    let mut cfg = BatchConfig::new(ClientConfig::new(url), &input, &out);
    cfg.api = BatchApi::Completions;
    cfg.stream = stream;
    cfg.concurrency = 2;
    cfg.retry.base_delay = Duration::from_millis(1);
    cfg.retry.max_delay = Duration::from_millis(2);
    f(&mut cfg);
    let s = run_batch(cfg, NoProgress, CancelToken::new())
        .await
        .unwrap();
    assert_eq!((s.ok, s.failed, s.failed_in_file), (0, 2, 2));
    records(&out)
}

#[tokio::test]
async fn http_200_without_choices_is_a_failure_with_its_reason() {
    for (body, reason) in [
        (
            r#"{"id":"x","usage":{"completion_tokens":3}}"#,
            r#"no "choices" in the response"#,
        ),
        (r#"{"id":"x","choices":[]}"#, r#""choices" is empty"#),
    ] {
        let recs = batch_against(ok_json(body), false, |_| {}).await;
        for r in &recs {
            assert_eq!(r["ok"], false, "{r}");
            assert_eq!(r["error_kind"], "no_answer", "{r}");
            let e = r["error"].as_str().unwrap();
            assert!(
                e.ends_with(&format!("answered HTTP 200 without an answer: {reason}")),
                "{e}"
            );
        }
    }
    // A stream whose chunks never carry a choice.
    let ev = "data: {\"usage\":{\"completion_tokens\":1}}\n\ndata: [DONE]\n\n";
    let raw = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{ev}",
        ev.len()
    );
    let recs = batch_against(Mode::Raw(raw.into_bytes()), true, |_| {}).await;
    assert_eq!(recs[0]["error_kind"], "no_answer");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_and_is_recorded() {
    let recs = batch_against(
        Mode::Stall {
            prefix: Vec::new(),
            hold: Duration::from_secs(30),
        },
        false,
        |c| c.client.generate_timeout = Duration::from_millis(300),
    )
    .await;
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["error_kind"], "timeout", "{r}");
        assert_eq!(r["attempts"], 1, "{r}");
    }
}

#[tokio::test]
async fn a_stalled_stream_is_retried_then_recorded() {
    let first = "data: {\"choices\":[{\"text\":\"Hi\"}]}\n\n";
    let prefix = format!("{}{:x}\r\n{first}\r\n", sse_head(), first.len());
    let recs = batch_against(
        Mode::Stall {
            prefix: prefix.into_bytes(),
            hold: Duration::from_secs(30),
        },
        true,
        |c| {
            c.client.stall_timeout = Duration::from_millis(200);
            c.retry.max_attempts = 2;
        },
    )
    .await;
    for r in &recs {
        assert_eq!(r["error_kind"], "stalled", "{r}");
        assert_eq!(r["attempts"], 2, "{r}");
    }
}

#[tokio::test]
async fn an_echoed_api_key_and_url_password_never_reach_the_records() {
    let key = "sk-secret-0123456789";
    let body = format!(r#"{{"error":"invalid key {key} for user"}}"#);
    let raw = format!(
        "HTTP/1.1 401 Unauthorized\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let url = serve(Mode::Raw(raw.into_bytes())).await;
    let with_pass = url.replace("http://", "http://admin:hunter2@");
    let dir = tempfile::tempdir().unwrap();
    let input = prompts(dir.path(), 2);
    let out = dir.path().join("out.jsonl");
    let mut cc = ClientConfig::new(with_pass);
    cc.api_key = Some(ApiKey::new(key));
    for stream in [false, true] {
        let _ = std::fs::remove_file(&out);
        let mut cfg = BatchConfig::new(cc.clone(), &input, &out);
        cfg.api = BatchApi::Completions;
        cfg.stream = stream;
        run_batch(cfg, NoProgress, CancelToken::new())
            .await
            .unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(!text.contains(key), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("invalid key <redacted> for user"), "{text}");
    }
    // The client's own errors too.
    let c = SglangClient::new(cc).unwrap();
    let e = c.server_info().await.unwrap_err().to_string();
    assert!(
        e.contains("<redacted>") && !e.contains(key) && !e.contains("hunter2"),
        "{e}"
    );
}

#[tokio::test]
async fn a_second_run_on_the_same_output_is_refused() {
    let url = serve(Mode::Stall {
        prefix: Vec::new(),
        hold: Duration::from_secs(30),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let input = prompts(dir.path(), 2);
    let out = dir.path().join("out.jsonl");
    let mut cfg = BatchConfig::new(ClientConfig::new(url), &input, &out);
    cfg.grace = Duration::from_millis(10);
    let cancel = CancelToken::new();
    let first = tokio::spawn(run_batch(cfg.clone(), NoProgress, cancel.clone()));
    // The first run takes its lock before sending anything; wait until it has.
    let lock = dir.path().join("out.jsonl.lock");
    for _ in 0..200 {
        if lock.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let e = run_batch(cfg.clone(), NoProgress, CancelToken::new())
        .await
        .unwrap_err();
    assert!(matches!(e, BatchError::Locked { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: another run-batch is writing this output (its lock {} is held); wait for it to end or use another --out",
            out.display(),
            lock.display()
        )
    );
    cancel.cancel();
    let s = first.await.unwrap().unwrap();
    assert!(s.cancelled);
    // Once the first run is over the lock is free again.
    let again = CancelToken::new();
    again.cancel();
    run_batch(cfg, NoProgress, again).await.unwrap();
}

#[tokio::test]
async fn the_prompts_file_as_output_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = prompts(dir.path(), 2);
    let before = std::fs::read(&input).unwrap();
    let same = dir.path().join(".").join("prompts.jsonl");
    let cfg = BatchConfig::new(ClientConfig::new("http://127.0.0.1:9"), &input, &same);
    let e = run_batch(cfg, NoProgress, CancelToken::new())
        .await
        .unwrap_err();
    assert!(matches!(e, BatchError::OutputIsInput(_)), "{e:?}");
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

#[tokio::test]
async fn bodies_in_flight_share_one_budget_that_is_given_back() {
    let url = serve(Mode::Route(vec![
        (
            "/server_info",
            Mode::Chunked {
                head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".into(),
                chunk: vec![b' '; 64 * 1024],
                total: 4 << 20,
            },
        ),
        (
            "/model_info",
            ok_json(r#"{"model_path": "m", "is_generation": true}"#),
        ),
    ]))
    .await;
    let c = client(&url, |c| {
        c.max_info_bytes = 16 << 20;
        c.max_in_flight_body_bytes = 1 << 20;
    });
    for _ in 0..3 {
        let e = c.server_info().await.unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{url}/server_info: response body (with the other answers in flight) larger than the cap of 1 MiB (stopped reading there)"
            )
        );
        // What the failed body held was given back: a small answer still fits.
        assert_eq!(
            c.model_info().await.unwrap().model_path.as_deref(),
            Some("m")
        );
    }
}
