//! Issue 30 (hardening, round 3), section C items 17 and 18: a scrape and a Prometheus answer
//! in bounded memory. `/metrics` with 540,049 series took 1.8 GB for one poll and was summed
//! into "running 540049"; a Prometheus answer of 2 million series held 3.0 GB. Each test
//! performs the attack against a tiny tokio server on loopback that writes the answer as it
//! goes (it stops when the client hangs up), and asserts the error, what was read and the
//! peak of the heap, measured by a counting allocator, one test at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sglang_client::{
    ClientConfig, ClientError, NotSummed, PromError, PrometheusClient, SglangClient,
};
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

/// One measured test at a time.
static ONE: Mutex<()> = Mutex::new(());

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Peak live heap over `f`, above what was live when it began (bytes).
async fn peak_over<T>(f: impl std::future::Future<Output = T>) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f.await;
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// Reads one request (head and a body of its Content-Length); false when the peer left.
async fn read_request(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        match s.read(&mut tmp).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
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

/// A server that answers every request with a chunked body: `prefix`, then `item(i)` for
/// `i` in `0..n` (`sep` between two), then `suffix`, written in chunks of about 64 KiB as
/// the client reads them.
async fn serve(
    content_type: &'static str,
    prefix: &'static str,
    item: fn(usize) -> String,
    sep: &'static str,
    n: usize,
    suffix: &'static str,
) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                if !read_request(&mut s).await {
                    return;
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                );
                if s.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let mut chunk = String::from(prefix);
                for i in 0..n {
                    if i > 0 {
                        chunk.push_str(sep);
                    }
                    chunk.push_str(&item(i));
                    if chunk.len() >= 64 << 10 {
                        let frame = format!("{:x}\r\n{chunk}\r\n", chunk.len());
                        if s.write_all(frame.as_bytes()).await.is_err() {
                            return;
                        }
                        chunk.clear();
                    }
                }
                chunk.push_str(suffix);
                let frame = format!("{:x}\r\n{chunk}\r\n0\r\n\r\n", chunk.len());
                let _ = s.write_all(frame.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}")
}

/// Item 18: 540,049 series of `sglang:num_running_reqs`, one per value of a `client` label
/// (about 27 MB of text). The scrape stops at the 10,000 label sets a server's schedulers
/// could fill, says so with its URL, and holds a few MB, not the page; before, it held 1.8 GB
/// and reported 540,049 running requests.
#[test]
fn a_scrape_of_540049_series_stops_at_the_cap() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let url = serve(
            "text/plain",
            "# TYPE sglang:num_running_reqs gauge\n",
            |i| format!("sglang:num_running_reqs{{tp_rank=\"0\",client=\"{i}\"}} 1\n"),
            "",
            540_049,
            "",
        )
        .await;
        let c = SglangClient::new(ClientConfig::new(&url)).unwrap();
        let (r, peak) = peak_over(c.metrics()).await;
        match r {
            Err(ClientError::TooManySeries {
                url: u,
                what,
                limit,
            }) => {
                assert_eq!(u, format!("{url}/metrics"));
                assert_eq!((what, limit), ("label sets of sglang: series", 10_000));
            }
            other => panic!("{other:?}"),
        }
        assert!(peak < 40 << 20, "peak heap {peak} bytes");
    });
}

/// Item 18: 540,049 series of a name outside the typed view (each kept as it is read) stop
/// at the 100,000 series of the default cap.
#[test]
fn a_scrape_of_540049_other_series_stops_at_the_series_cap() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let url = serve(
            "text/plain",
            "sglang:num_running_reqs 1\n",
            |i| format!("python_junk{{client=\"{i}\"}} 1\n"),
            "",
            540_049,
            "",
        )
        .await;
        let c = SglangClient::new(ClientConfig::new(&url)).unwrap();
        let (r, peak) = peak_over(c.metrics()).await;
        match r {
            Err(ClientError::TooManySeries { what, limit, .. }) => {
                assert_eq!((what, limit), ("series", 100_000));
            }
            other => panic!("{other:?}"),
        }
        assert!(peak < 96 << 20, "peak heap {peak} bytes");
    });
}

/// Item 18: under the caps, 1,000 series of `sglang:num_running_reqs` that differ by a
/// `client` label are not one server's ranks: the figure is refused, naming the label, never
/// summed into "1000 running"; the queue of two DP ranks beside them is still summed.
#[test]
fn series_that_are_not_ranks_are_refused_not_summed() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let url = serve(
            "text/plain",
            "sglang:num_queue_reqs{tp_rank=\"0\",dp_rank=\"0\"} 1\nsglang:num_queue_reqs{tp_rank=\"0\",dp_rank=\"1\"} 2\n",
            |i| format!("sglang:num_running_reqs{{tp_rank=\"0\",client=\"{i}\"}} 1\n"),
            "",
            1_000,
            "",
        )
        .await;
        let c = SglangClient::new(ClientConfig::new(&url)).unwrap();
        let m = c.metrics().await.unwrap();
        assert_eq!(m.total(|x| x.num_running_reqs), None);
        assert_eq!(m.total(|x| x.num_queue_reqs), Some(3.0));
        assert_eq!(
            m.not_summed,
            [NotSummed {
                metric: "sglang:num_running_reqs".into(),
                label: "client".into(),
                values: 1_000,
                series: 1_000,
            }]
        );
        assert!(m.problems[0].contains("differ by label \"client\""), "{:?}", m.problems);
    });
}

/// Item 17: an instant query answered with 2,000,000 series (about 100 MB of JSON) stops at
/// the 10,000 series one answer may hold, decoded as it arrives; before, 3.0 GB.
#[test]
fn two_million_series_stop_at_the_cap() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let url = serve(
            "application/json",
            r#"{"status":"success","data":{"resultType":"vector","result":["#,
            |i| format!(r#"{{"metric":{{"instance":"h:{i}","job":"sglang"}},"value":[1,"1"]}}"#),
            ",",
            2_000_000,
            "]}}",
        )
        .await;
        let c = PrometheusClient::new(&url, Duration::from_secs(60)).unwrap();
        let (r, peak) = peak_over(c.query("up", 1.0)).await;
        match r {
            Err(PromError::TooManySeries { url: u, limit }) => {
                assert_eq!(u, format!("{url}/api/v1/query"));
                assert_eq!(limit, 10_000);
            }
            other => panic!("{other:?}"),
        }
        assert!(peak < 12 << 20, "peak heap {peak} bytes");
    });
}

/// Item 17: a range answer whose one series holds 1,000,000 points (Prometheus never returns
/// more than 11,000) stops at the cap of a series.
#[test]
fn a_series_of_a_million_points_stops_at_the_cap() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let url = serve(
            "application/json",
            r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"sglang:num_running_reqs"},"values":["#,
            |i| format!(r#"[{i},"1"]"#),
            ",",
            1_000_000,
            "]}]}}",
        )
        .await;
        let c = PrometheusClient::new(&url, Duration::from_secs(60)).unwrap();
        let (r, peak) = peak_over(c.query_range("sglang:num_running_reqs", 0.0, 100.0, 1.0)).await;
        match r {
            Err(PromError::TooManyPoints { what, limit, .. }) => {
                assert_eq!((what, limit), ("in one series", 11_000));
            }
            other => panic!("{other:?}"),
        }
        assert!(peak < 4 << 20, "peak heap {peak} bytes");
    });
}
