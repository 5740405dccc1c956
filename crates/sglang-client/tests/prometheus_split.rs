//! The Prometheus client never asks for more than 10,000 points per series in one request:
//! a long range is split in time, and the pieces join into one series without a point twice.
//! A fake Prometheus on loopback answers each `query_range` with one point per step of the
//! range it was asked for, and refuses (HTTP 400, as Prometheus does) more than 11,000.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sglang_client::PrometheusClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn form_value<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    body.split('&')
        .find_map(|kv| kv.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

async fn fake_prometheus(requests: Arc<AtomicU64>) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let requests = requests.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let body = loop {
                    let n = s.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    if let Some(i) = text.find("\r\n\r\n") {
                        let len: usize = text[..i]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if buf.len() >= i + 4 + len {
                            break text[i + 4..i + 4 + len].to_string();
                        }
                    }
                };
                requests.fetch_add(1, Ordering::Relaxed);
                let num = |k| {
                    form_value(&body, k)
                        .and_then(|v| v.parse::<f64>().ok())
                        .unwrap()
                };
                let (start, end, step) = (num("start"), num("end"), num("step"));
                let points = ((end - start) / step).floor() as u64 + 1;
                let (status, json) = if points > 11_000 {
                    (400, r#"{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"}"#.to_string())
                } else {
                    let values: Vec<String> = (0..points)
                        .map(|i| {
                            let t = start + i as f64 * step;
                            format!("[{t},\"{}\"]", t - 1_000_000.0)
                        })
                        .collect();
                    (
                        200,
                        format!(
                            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"__name__":"sglang:num_running_reqs","instance":"h:1"}},"values":[{}]}}]}}}}"#,
                            values.join(",")
                        ),
                    )
                };
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    json.len()
                );
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(json.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn long_ranges_are_split_and_joined() {
    let requests = Arc::new(AtomicU64::new(0));
    let url = fake_prometheus(requests.clone()).await;
    let c = PrometheusClient::new(&url, std::time::Duration::from_secs(10)).unwrap();
    // 24 h at a 1 s step: 86,401 points, 9 pieces of at most 10,000.
    let start = 1_000_000.0;
    let end = start + 86_400.0;
    let s = c
        .query_range("sglang:num_running_reqs", start, end, 1.0)
        .await
        .unwrap();
    assert_eq!(requests.load(Ordering::Relaxed), 9);
    assert_eq!(c.requests_sent(), 9);
    assert_eq!(s.len(), 1);
    let pts = &s[0].points;
    assert_eq!(pts.len(), 86_401);
    assert!(pts.windows(2).all(|w| w[1].0 - w[0].0 == 1.0));
    assert_eq!(pts[0], (start, 0.0));
    assert_eq!(pts[86_400], (end, 86_400.0));
    assert_eq!(s[0].labels.get("instance").map(String::as_str), Some("h:1"));
}

#[tokio::test]
async fn prometheus_errors_are_named() {
    let requests = Arc::new(AtomicU64::new(0));
    let url = fake_prometheus(requests).await;
    let c = PrometheusClient::new(&url, std::time::Duration::from_secs(10)).unwrap();
    // A step of 0 is read as 15 s, never sent as is.
    let s = c.query_range("x", 0.0, 30.0, 0.0).await.unwrap();
    assert_eq!(s[0].points.len(), 3);
    let e = PrometheusClient::new("http://127.0.0.1:1", std::time::Duration::from_secs(2))
        .unwrap()
        .series(&["{}".into()], 0.0, 1.0)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("127.0.0.1:1/api/v1/series"), "{e}");
}
