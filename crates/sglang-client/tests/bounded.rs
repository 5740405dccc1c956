//! Issue 30 (hardening, round 3), section C item 19: `run-batch` in bounded memory. A
//! streamed answer had no cap of its own (each event had one, their sum none: 8 streams held
//! 1.3 GB), and every prompt of the input was held from start to end (1 M prompts: 1.08 GB).
//!
//! The heap is measured by a counting allocator (its peak of live bytes), one test at a time;
//! the servers are tiny tokio loops on loopback, bounded in bytes sent.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sglang_client::ClientConfig;
use sglang_client::batch::{BatchApi, BatchConfig, CancelToken, NoProgress, run_batch};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The system allocator, counting live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to `System` unchanged; the counters only add and subtract.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: as `System::alloc`, with the caller's layout.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `alloc` with `l`.
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// A runtime of its own for each test, run while the test holds [`ONE`].
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// One measured test at a time.
static ONE: Mutex<()> = Mutex::new(());

/// Peak live heap over `f`, above what was live when it began (bytes).
async fn peak_over<T>(f: impl std::future::Future<Output = T>) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f.await;
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// Reads a request head and its body (by Content-Length).
async fn read_request(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        let Ok(n) = s.read(&mut tmp).await else {
            return false;
        };
        if n == 0 {
            return false;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
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
        match s.read(&mut tmp).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => have += n,
        }
    }
    true
}

/// How a test server answers a request: it writes the response head into the buffer and
/// returns a frame and how many times to send it (`None`: close the connection).
type Answer = fn(&mut Vec<u8>) -> Option<(Vec<u8>, u64)>;

/// Serves each request with `answer` (keep-alive, request after request).
async fn serve(answer: Answer) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                while read_request(&mut s).await {
                    let mut head = Vec::new();
                    let Some((frame, total)) = answer(&mut head) else {
                        return;
                    };
                    if s.write_all(&head).await.is_err() {
                        return;
                    }
                    // `frame` `total` times (a chunked stream), or once (a whole body)
                    for _ in 0..total {
                        if s.write_all(&frame).await.is_err() {
                            return;
                        }
                    }
                    if total > 1 && s.write_all(b"0\r\n\r\n").await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// A streamed answer of 8 MiB (128 events of 64 KiB of text, each under the 1 MiB cap of
/// an event) against a cap of 1 MiB: the request fails with the cap in its record, and the
/// run holds about the cap, not the answer. Before, the record was a success holding all
/// 8 MiB.
#[test]
fn a_streamed_answer_past_its_cap_is_a_recorded_failure() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
    fn sse(head: &mut Vec<u8>) -> Option<(Vec<u8>, u64)> {
        head.extend_from_slice(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        let event = format!(
            "data: {{\"choices\":[{{\"index\":0,\"text\":\"{}\"}}]}}\n\n",
            "x".repeat(64 << 10)
        );
        let frame = format!("{:x}\r\n{event}\r\n", event.len()).into_bytes();
        Some((frame, 128))
    }
    let url = serve(sse).await;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("prompts.jsonl");
    std::fs::write(&input, "{\"id\": \"q0\", \"prompt\": \"tell me everything\"}\n").unwrap();
    let out = dir.path().join("out.jsonl");
    let mut client = ClientConfig::new(url);
    client.max_json_bytes = 1 << 20;
    let mut cfg = BatchConfig::new(client, &input, &out);
    cfg.api = BatchApi::Completions;
    cfg.stream = true;
    cfg.concurrency = 1;
    let (s, peak) = peak_over(run_batch(cfg, NoProgress, CancelToken::new())).await;
    let s = s.unwrap();
    assert_eq!((s.ok, s.failed, s.retries), (0, 1, 0));
    let rec: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&out).unwrap().trim()).unwrap();
    assert_eq!(rec["error_kind"], "too_large", "{rec}");
    let e = rec["error"].as_str().unwrap();
    assert!(
        e.ends_with("/v1/completions: streamed answer larger than the cap of 1 MiB (stopped reading there)"),
        "{e}"
    );
    assert!(rec["content"].is_null());
    assert!(peak < 6 << 20, "peak heap {peak} bytes");
    });
}

/// 500 prompts of 64 KiB (a 32 MiB input) sent to a server that answers at once: the run
/// holds the prompts in flight, not the input (before: all of them, over 32 MiB), and every
/// prompt is answered once, in the output.
#[test]
fn the_prompts_are_read_as_they_are_sent() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
    fn ok(head: &mut Vec<u8>) -> Option<(Vec<u8>, u64)> {
        let body = r#"{"choices":[{"index":0,"text":"ok","finish_reason":"stop"}],"usage":{"prompt_tokens":4000,"completion_tokens":1}}"#;
        head.extend_from_slice(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        Some((body.as_bytes().to_vec(), 1))
    }
    let url = serve(ok).await;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("prompts.jsonl");
    let n = 500;
    let filler = "y".repeat(64 << 10);
    let text: String = (0..n)
        .map(|i| format!("{{\"id\": \"q{i}\", \"prompt\": \"{i} {filler}\"}}\n"))
        .collect();
    std::fs::write(&input, &text).unwrap();
    let size = text.len();
    drop(text);
    let out = dir.path().join("out.jsonl");
    let mut cfg = BatchConfig::new(ClientConfig::new(url), &input, &out);
    cfg.api = BatchApi::Completions;
    cfg.concurrency = 8;
    cfg.progress_interval = Duration::from_secs(60);
    let (s, peak) = peak_over(run_batch(cfg, NoProgress, CancelToken::new())).await;
    let s = s.unwrap();
    assert_eq!((s.input_prompts, s.ok, s.failed), (n, n, 0));
    let ids: std::collections::HashSet<String> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].to_string())
        .collect();
    assert_eq!(ids.len() as u64, n);
    assert!(
        peak < size / 4,
        "peak heap {peak} bytes for an input of {size} bytes"
    );
    });
}
