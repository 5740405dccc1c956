//! Issue 30 (hardening, round 3), section C "No quadratic or unbounded path": the attacks on
//! the reader's chunked read, performed on small inputs with the work counted, not timed.
//!
//! Item 13: a large file whose tail has no newline (a crash-zeroed tail, a sparse file). Every
//! cut of the split searched from its target to the end of the file for a newline that is not
//! there, so the bytes read grew with the square of the file's length (1 GiB: 111 s).

use sglang_log::parallel::{parse_ranges_in_order, split_every};
use std::path::PathBuf;

/// Bytes this thread has read through `read` calls (Linux's `/proc/thread-self/io`, `rchar`);
/// `None` where the kernel does not say.
fn thread_rchar() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/thread-self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|v| v.trim().parse().ok())
}

/// A real log (its lines are SGLang's) followed by 48 MiB of NULs without a newline: a
/// sparse file, so it costs no disk.
fn log_with_a_zeroed_tail(dir: &std::path::Path) -> (PathBuf, u64, u64) {
    let real = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/real/002-i3909-throughput-steadily-decreases.log"
    ))
    .unwrap();
    assert!(real.ends_with(b"\n"));
    let lines = real.iter().filter(|&&b| b == b'\n').count() as u64;
    let path = dir.join("g.log");
    std::fs::write(&path, &real).unwrap();
    let len = real.len() as u64 + (48 << 20);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len)
        .unwrap();
    (path, len, lines)
}

/// The split reads the NUL tail once: at most the file's length plus one read per cut, where
/// it read the tail once per cut (48 cuts × 24 MiB on average: 1.2 GB, against 48 MiB). The
/// chunks are then read as one sequential read would: the log's lines, and the tail as one
/// line cut at 1 MiB.
#[test]
fn a_tail_without_a_newline_is_searched_once() {
    let dir = tempfile::tempdir().unwrap();
    let (path, len, lines) = log_with_a_zeroed_tail(dir.path());
    let before = thread_rchar();
    let ranges = split_every(&path, 1 << 20).unwrap();
    let read = thread_rchar().zip(before).map(|(a, b)| a - b);
    // the log's lines are the first range; no cut inside the tail
    assert_eq!(ranges.len(), 1, "{ranges:?}");
    assert_eq!(ranges.last().map(|r| r.end), Some(len));
    if let Some(read) = read {
        assert!(
            read <= len + 64 * 4096 + (64 << 10),
            "the split read {read} bytes of a {len}-byte file"
        );
    }
    let stats = parse_ranges_in_order(&path, &ranges, 2, || (), |_, _, _| {}, |_, _| {}).unwrap();
    assert_eq!(stats.lines, lines + 1);
    assert_eq!(stats.long_lines, 1);
    assert_eq!(stats.bytes, len);
}

/// The same tail after a log of several chunks: cuts are made in the log, none in the tail,
/// and the whole is read once by the split.
#[test]
fn cuts_stop_where_the_last_newline_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.log");
    let line = b"[2025-04-15 17:25:16 DP0 TP0] Decode batch. #running-req: 92, #token: 264288, token usage: 0.92, gen throughput (token/s): 324.86, #queue-req: 990, \n";
    let n = (3 << 20) / line.len() + 1;
    std::fs::write(&path, line.repeat(n)).unwrap();
    let log_len = (n * line.len()) as u64;
    let len = log_len + (32 << 20);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len)
        .unwrap();
    let before = thread_rchar();
    let ranges = split_every(&path, 1 << 20).unwrap();
    let read = thread_rchar().zip(before).map(|(a, b)| a - b);
    assert!(ranges.len() >= 3, "{ranges:?}");
    assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
    // every cut but the end is inside the log, after a newline
    assert!(
        ranges[..ranges.len() - 1]
            .iter()
            .all(|r| r.end <= log_len && r.end % line.len() as u64 == 0),
        "{ranges:?}"
    );
    if let Some(read) = read {
        assert!(read <= len + (64 << 10), "the split read {read} bytes");
    }
    let stats = parse_ranges_in_order(&path, &ranges, 2, || (), |_, _, _| {}, |_, _| {}).unwrap();
    assert_eq!(stats.lines, n as u64 + 1);
    assert_eq!(stats.batch_lines, n as u64);
    assert_eq!(stats.long_lines, 1);
}
