//! Data honesty of `run-batch` (issue 30, items 20-23), each attack performed on loopback:
//! a short API key must not rewrite answers, a key echoed encoded must not pass redaction, a
//! link to the output must not pass its lock, and the output's work file must not be the input.
//!
//! Each server is a tokio loop on 127.0.0.1 that reads one request head and answers with raw
//! bytes; every wait is bounded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use sglang_client::batch::{BatchApi, BatchConfig, BatchError, CancelToken, NoProgress, run_batch};
use sglang_client::{ApiKey, ClientConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Reads a request head and its body (by Content-Length).
async fn read_request(s: &mut TcpStream) -> Option<()> {
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
    Some(())
}

/// Answers every request with `status` and the JSON `body`, after `delay`; returns the base URL.
async fn serve(status: &'static str, body: String, delay: Duration) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                if read_request(&mut s).await.is_none() {
                    return;
                }
                tokio::time::sleep(delay).await;
                let raw = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(raw.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}

fn prompts(dir: &Path, n: usize) -> PathBuf {
    let p = dir.join("prompts.jsonl");
    let text: String = (0..n)
        .map(|i| format!("{{\"id\":\"p{i}\",\"prompt\":\"hello {i}\"}}\n"))
        .collect();
    std::fs::write(&p, text).unwrap();
    p
}

fn records(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn config(url: &str, key: &str, input: &Path, out: &Path) -> BatchConfig {
    let mut cc = ClientConfig::new(url);
    cc.api_key = Some(ApiKey::new(key));
    let mut cfg = BatchConfig::new(cc, input, out);
    cfg.api = BatchApi::Completions;
    cfg.retry.max_attempts = 1;
    cfg
}

/// Item 20. Before: a key `tok` turned every answer's "tok" into `<redacted>` ("the
/// <redacted>enizer"). After: answers are kept byte for byte, whatever the key.
#[tokio::test]
async fn a_short_api_key_leaves_answers_as_the_server_sent_them() {
    let answer = "the tokenizer counts tok by tok; sk-long-key-0123 too";
    let body = format!(
        r#"{{"choices":[{{"index":0,"text":"{answer}","finish_reason":"stop"}}],"usage":{{"prompt_tokens":2,"completion_tokens":9,"total_tokens":11}}}}"#
    );
    let url = serve("200 OK", body, Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let input = prompts(dir.path(), 3);
    for key in ["tok", "sk-long-key-0123"] {
        let out = dir.path().join(format!("out-{key}.jsonl"));
        let s = run_batch(
            config(&url, key, &input, &out),
            NoProgress,
            CancelToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(s.ok, 3, "{s:?}");
        for r in records(&out) {
            assert_eq!(r["content"], answer, "key {key}: {r}");
        }
    }
}

/// Item 21. Before: a key echoed URL-encoded, base64-encoded or `\u`-escaped in an error body
/// reached the records whole. After: each form is `<redacted>`, and a short key redacts
/// nothing in an error either.
#[tokio::test]
async fn a_key_echoed_encoded_in_an_error_never_reaches_the_records() {
    let key = "sk-Ab+c/d=0123456789";
    let b64 = base64::engine::general_purpose::STANDARD;
    let pct =
        percent_encoding::utf8_percent_encode(key, percent_encoding::NON_ALPHANUMERIC).to_string();
    let uni: String = key
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    let forms = [
        pct.clone(),
        b64.encode(key),
        b64.encode(format!("Bearer {key}")),
        uni,
    ];
    let dir = tempfile::tempdir().unwrap();
    let input = prompts(dir.path(), 2);
    for form in &forms {
        let body = format!(r#"{{"error":"bad auth header [{form}] for user"}}"#);
        let url = serve("401 Unauthorized", body, Duration::ZERO).await;
        let out = dir.path().join("out.jsonl");
        let _ = std::fs::remove_file(&out);
        let s = run_batch(
            config(&url, key, &input, &out),
            NoProgress,
            CancelToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(s.failed, 2, "{s:?}");
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(!text.contains(form.as_str()), "{form}: {text}");
        // (A prefix encoded with the key, `Bearer `, keeps its own characters.)
        assert!(text.contains("<redacted>] for user"), "{form}: {text}");
        assert!(
            !text.contains("Ab+c") && !text.contains("0123456789"),
            "{text}"
        );
    }
    // A three-letter key is no key: the error keeps its words.
    let url = serve(
        "401 Unauthorized",
        r#"{"error":"tok is not a valid token"}"#.into(),
        Duration::ZERO,
    )
    .await;
    let out = dir.path().join("short.jsonl");
    run_batch(
        config(&url, "tok", &input, &out),
        NoProgress,
        CancelToken::new(),
    )
    .await
    .unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("tok is not a valid token"), "{text}");
}

/// Item 22. Before: a second run given a symbolic or a hard link to the first run's output took
/// `LINK.lock`, not `OUT.lock`, and both wrote every id (28-56 duplicated). After: the second
/// run is refused with `Locked`, and each id is written once.
#[cfg(unix)]
#[tokio::test]
async fn a_link_to_a_locked_output_is_refused() {
    let url = serve(
        "200 OK",
        r#"{"choices":[{"index":0,"text":"ok","finish_reason":"stop"}]}"#.into(),
        Duration::from_millis(400),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let input = prompts(dir.path(), 4);
    let out = dir.path().join("out.jsonl");
    std::fs::write(&out, "").unwrap();
    let sym = dir.path().join("sym.jsonl");
    let hard = dir.path().join("hard.jsonl");
    std::os::unix::fs::symlink(&out, &sym).unwrap();
    std::fs::hard_link(&out, &hard).unwrap();
    let mut cfg = config(&url, "sk-unused-key-0000", &input, &out);
    cfg.concurrency = 1;
    let first = tokio::spawn(run_batch(cfg.clone(), NoProgress, CancelToken::new()));
    // The first run takes its locks before its first request (which the server holds 400 ms).
    tokio::time::sleep(Duration::from_millis(200)).await;
    for link in [&sym, &hard] {
        let mut c = cfg.clone();
        c.output = link.clone();
        let e = tokio::time::timeout(
            Duration::from_secs(10),
            run_batch(c, NoProgress, CancelToken::new()),
        )
        .await
        .expect("a refused run returns at once")
        .unwrap_err();
        assert!(
            matches!(e, BatchError::Locked { .. }),
            "{}: {e:?}",
            link.display()
        );
    }
    let s = first.await.unwrap().unwrap();
    assert_eq!(s.ok, 4, "{s:?}");
    let recs = records(&out);
    assert_eq!(recs.len(), 4, "{recs:?}");
    // Through the symbolic link, a later run resumes the same file: nothing sent again.
    let mut c = cfg.clone();
    c.output = sym.clone();
    let s = run_batch(c, NoProgress, CancelToken::new()).await.unwrap();
    assert_eq!((s.resumed, s.ok), (4, 0), "{s:?}");
    assert!(
        std::fs::symlink_metadata(&sym)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// Item 23. Before: `--prompts OUT.tmp` was overwritten by the resume's rewrite and renamed
/// over the output (the prompts gone). After: refused before anything is written.
#[tokio::test]
async fn the_outputs_work_file_as_prompts_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    std::fs::write(&out, "{\"id\":\"p0\",\"ok\":false,\"error\":\"x\"}\n").unwrap();
    let input = dir.path().join("out.jsonl.tmp");
    std::fs::write(&input, "{\"id\":\"p0\",\"prompt\":\"hi\"}\n").unwrap();
    let before = std::fs::read(&input).unwrap();
    let cfg = config("http://127.0.0.1:9", "sk-unused-key-0000", &input, &out);
    let e = run_batch(cfg, NoProgress, CancelToken::new())
        .await
        .unwrap_err();
    assert!(matches!(e, BatchError::InputIsOutputWork { .. }), "{e:?}");
    assert!(e.to_string().contains("out.jsonl.tmp"), "{e}");
    assert_eq!(std::fs::read(&input).unwrap(), before);
}
