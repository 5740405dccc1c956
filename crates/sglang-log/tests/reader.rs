//! `LogReader`: gzip (single and multi-member), CRLF, invalid UTF-8, the 1 MiB line cap, live mode
//! (held-back partial last line), and the typed I/O errors.

use flate2::Compression;
use flate2::write::GzEncoder;
use sglang_log::{Event, LogReader, ReadError, parse_line};
use std::io::{Read, Write};

const DECODE: &str = "[2025-06-01 12:00:00 TP0] Decode batch, #running-req: 7, #token: 700, token usage: 0.50, cuda graph: True, gen throughput (token/s): 99.50, #queue-req: 3";
const PREFILL: &str = "[2025-06-01 12:00:01 TP0] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 0, token usage: 0.50, #running-req: 7, #queue-req: 2, ";

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn reads_gzip_including_multiple_members() {
    let text = format!("{DECODE}\nuvicorn noise\n{PREFILL}\n");
    let mut bytes = gz(text.as_bytes());
    bytes.extend(gz(format!("{DECODE}\n").as_bytes())); // `cat a.gz b.gz`
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.log.gz");
    std::fs::write(&path, &bytes).unwrap();
    let mut running = Vec::new();
    let stats = LogReader::open(&path)
        .unwrap()
        .for_each(|rec| {
            if let Event::Batch(b) = &rec.event {
                running.push((rec.line_no, b.running_req()));
            }
        })
        .unwrap();
    assert_eq!(running, [(1, Some(7)), (3, Some(7)), (4, Some(7))]);
    assert_eq!(
        (
            stats.lines,
            stats.decode_lines,
            stats.prefill_lines,
            stats.other_lines
        ),
        (4, 2, 1, 1)
    );
    assert_eq!(stats.bytes, (text.len() + DECODE.len() + 1) as u64);
}

#[test]
fn corrupt_gzip_is_a_gzip_error_with_path() {
    let mut bytes = gz(format!("{DECODE}\n").repeat(2000).as_bytes());
    let n = bytes.len();
    bytes.truncate(n / 2);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.gz");
    std::fs::write(&path, &bytes).unwrap();
    let mut lines = 0;
    let err = LogReader::open(&path)
        .unwrap()
        .for_each(|_| lines += 1)
        .unwrap_err();
    match &err {
        ReadError::Gzip {
            path: p,
            compressed_offset,
            ..
        } => {
            assert_eq!(p, &path);
            assert!(*compressed_offset > 0);
        }
        other => panic!("expected a gzip error, got {other:?}"),
    }
    assert!(err.to_string().contains("broken.gz"));
}

#[test]
fn crlf_lines_parse_like_lf_lines() {
    let text = format!("{DECODE}\r\n{PREFILL}\r\n");
    let mut kinds = Vec::new();
    let stats = LogReader::from_reader("crlf", text.as_bytes())
        .for_each(|rec| {
            let b = rec.event.as_batch().unwrap();
            kinds.push((b.kind, b.queue_req(), b.graph()));
        })
        .unwrap();
    assert_eq!(stats.batch_lines, 2);
    assert_eq!(kinds[0].1, Some(3));
    assert_eq!(kinds[0].2, Some(true));
    assert_eq!(kinds[1].1, Some(2));
}

#[test]
fn invalid_utf8_is_malformed_only_with_a_batch_marker() {
    let mut bad_batch = DECODE.as_bytes().to_vec();
    bad_batch.extend_from_slice(b", weird: \xff\xfe");
    let rec = parse_line(&bad_batch, 9);
    assert_eq!(
        rec.event,
        Event::Malformed {
            reason: "invalid UTF-8 in a batch line"
        }
    );
    assert_eq!(rec.line_no, 9);
    let rec = parse_line(b"binary \xff\xfe junk", 10);
    assert_eq!(rec.event, Event::Other);

    let mut input = bad_batch.clone();
    input.push(b'\n');
    input.extend_from_slice(DECODE.as_bytes());
    input.push(b'\n');
    let stats = LogReader::from_reader("mixed", &input[..])
        .for_each(|_| {})
        .unwrap();
    assert_eq!((stats.malformed_lines, stats.batch_lines), (1, 1));
    assert_eq!(stats.malformed[0].line_no, 1);
    assert_eq!(stats.malformed[0].excerpt.chars().count(), 160);
}

/// Issue 13 item 1: a line of 16 MiB is cut at 1 MiB: delivered as malformed with its line
/// number and head, the rest skipped up to its newline, and the lines around it unharmed;
/// every byte is still counted.
#[test]
fn a_line_longer_than_1_mib_is_malformed_and_skipped() {
    let big = format!(
        "[2026-02-10 13:58:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.88, blob='{}')",
        "x".repeat(16 << 20)
    );
    let input = format!("{DECODE}\n{big}\n{PREFILL}\n");
    // from a file-like reader (one read) and from a pipe (64 KiB per read)
    let pipe = Chunks(
        input
            .as_bytes()
            .chunks(64 << 10)
            .map(<[u8]>::to_vec)
            .collect(),
    );
    let readers: [Box<dyn Read>; 2] = [Box::new(input.as_bytes()), Box::new(pipe)];
    for r in readers {
        let mut seen = Vec::new();
        let stats = LogReader::from_reader("big", r)
            .for_each(|rec| seen.push((rec.line_no, rec.event.name())))
            .unwrap();
        assert_eq!(seen, [(1, "batch"), (2, "malformed"), (3, "batch")]);
        assert_eq!(stats.bytes, input.len() as u64);
        assert_eq!(
            (stats.lines, stats.malformed_lines, stats.long_lines),
            (3, 1, 1)
        );
        let m = &stats.malformed[0];
        assert_eq!((m.line_no, m.reason), (2, sglang_log::LONG_LINE_REASON));
        assert!(
            m.excerpt
                .starts_with("[2026-02-10 13:58:00] server_args=ServerArgs(")
        );
    }
}

/// A line just under the cap is an ordinary line; one just over it is cut (the cap counts the
/// bytes before the newline).
#[test]
fn the_cap_is_exactly_1_mib() {
    let under = "y".repeat(sglang_log::MAX_LINE - 1);
    let over = "z".repeat(sglang_log::MAX_LINE);
    let input = format!("{under}\n{over}\n{DECODE}\n");
    let mut seen = Vec::new();
    let stats = LogReader::from_reader("edge", input.as_bytes())
        .for_each(|rec| seen.push(rec.event.name()))
        .unwrap();
    assert_eq!(seen, ["other", "malformed", "batch"]);
    assert_eq!(stats.bytes, input.len() as u64);
}

/// A sparse file or a rotation hole: megabytes of NUL bytes without a newline, then the log
/// goes on. Read from a FIFO-like source in small pieces, and in live mode across calls.
#[test]
fn a_hole_of_nul_bytes_is_one_malformed_line() {
    let mut data = vec![0u8; 5 << 20];
    data.push(b'\n');
    data.extend_from_slice(DECODE.as_bytes());
    data.push(b'\n');
    let mut pieces: Vec<Vec<u8>> = data.chunks(4096).map(<[u8]>::to_vec).collect();
    // an empty piece: the writer has not written more yet (the first call ends there)
    pieces.insert(pieces.len() / 2, Vec::new());
    let mut reader = LogReader::from_reader("hole", Pausing(pieces)).live(true);
    let mut seen = Vec::new();
    let a = reader
        .for_each(|rec| seen.push((rec.line_no, rec.event.name())))
        .unwrap();
    assert_eq!(seen, [(1, "malformed")]);
    assert_eq!(a.held_back_bytes, 0);
    // the rest of the hole and the next line arrive later
    let b = reader
        .for_each(|rec| seen.push((rec.line_no, rec.event.name())))
        .unwrap();
    assert_eq!(seen, [(1, "malformed"), (2, "batch")]);
    assert_eq!(a.bytes + b.bytes, data.len() as u64);
    assert_eq!((a.long_lines, b.long_lines, b.lines), (1, 0, 1));
}

/// Like [`Chunks`], but an empty chunk is an end of input for now (a log not yet appended to).
struct Pausing(Vec<Vec<u8>>);
impl Read for Pausing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.0.is_empty() {
            return Ok(0);
        }
        if self.0[0].is_empty() {
            self.0.remove(0);
            return Ok(0);
        }
        let c = &mut self.0[0];
        let n = c.len().min(buf.len());
        buf[..n].copy_from_slice(&c[..n]);
        c.drain(..n);
        if c.is_empty() {
            self.0.remove(0);
        }
        Ok(n)
    }
}

/// A reader that hands out its data in the given chunks, like a log being appended to.
struct Chunks(Vec<Vec<u8>>);
impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.0.is_empty() {
            return Ok(0);
        }
        let c = &mut self.0[0];
        let n = c.len().min(buf.len());
        buf[..n].copy_from_slice(&c[..n]);
        c.drain(..n);
        if c.is_empty() {
            self.0.remove(0);
        }
        Ok(n)
    }
}

#[test]
fn live_mode_holds_back_a_half_written_last_line() {
    let half = &DECODE[..60];
    // first read: one full line + half a line
    let mut r = LogReader::from_reader(
        "live",
        Chunks(vec![format!("{PREFILL}\n{half}").into_bytes()]),
    )
    .live(true);
    let mut got = Vec::new();
    let s1 = r.for_each(|rec| got.push(rec.event.name())).unwrap();
    assert_eq!(got, ["batch"]);
    assert_eq!(s1.held_back_bytes, 60);
    assert_eq!(s1.malformed_lines, 0);
    assert_eq!(r.lines_read(), 1);

    // without live mode the same half line is parsed at EOF (and is not a batch line: no marker yet)
    let mut r2 = LogReader::from_reader(
        "static",
        Chunks(vec![format!("{PREFILL}\n{half}").into_bytes()]),
    );
    let s2 = r2.for_each(|_| {}).unwrap();
    assert_eq!(s2.lines, 2);
}

#[test]
fn live_mode_continues_the_held_back_line() {
    // the source grows between calls: emulate with a shared buffer
    use std::sync::{Arc, Mutex};
    #[derive(Clone)]
    struct Growing(Arc<Mutex<Vec<u8>>>, usize);
    impl Read for Growing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let d = self.0.lock().unwrap();
            let n = (d.len() - self.1).min(buf.len());
            buf[..n].copy_from_slice(&d[self.1..self.1 + n]);
            self.1 += n;
            Ok(n)
        }
    }
    let shared = Arc::new(Mutex::new(
        format!("{PREFILL}\n{}", &DECODE[..60]).into_bytes(),
    ));
    let mut r = LogReader::from_reader("live", Growing(Arc::clone(&shared), 0)).live(true);
    assert_eq!(r.for_each(|_| {}).unwrap().lines, 1);
    shared
        .lock()
        .unwrap()
        .extend_from_slice(format!("{}\n", &DECODE[60..]).as_bytes());
    let mut running = None;
    let s = r
        .for_each(|rec| {
            assert_eq!(rec.line_no, 2);
            running = rec.event.as_batch().and_then(|b| b.running_req());
        })
        .unwrap();
    assert_eq!((s.lines, s.held_back_bytes, running), (1, 0, Some(7)));
}

#[test]
fn open_errors_carry_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.log");
    match LogReader::open(&missing) {
        Err(ReadError::Open { path, .. }) => assert_eq!(path, missing),
        Err(e) => panic!("unexpected {e}"),
        Ok(_) => panic!("opened a missing file"),
    }
    match LogReader::open(dir.path()) {
        Err(e @ ReadError::NotAFile { .. }) => assert!(e.to_string().contains("directory")),
        Err(e) => panic!("unexpected {e}"),
        Ok(_) => panic!("opened a directory"),
    }
}

#[test]
fn read_errors_carry_the_line_number() {
    struct Fails(usize);
    impl Read for Fails {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                self.0 += 1;
                let d = format!("{DECODE}\n{DECODE}\n");
                buf[..d.len()].copy_from_slice(d.as_bytes());
                Ok(d.len())
            } else {
                Err(std::io::Error::other("disk gone"))
            }
        }
    }
    let mut n = 0;
    let err = LogReader::from_reader("flaky.log", Fails(0))
        .for_each(|_| n += 1)
        .unwrap_err();
    assert_eq!(n, 2);
    match err {
        ReadError::Read { path, line_no, .. } => {
            assert_eq!(path.to_string_lossy(), "flaky.log");
            assert_eq!(line_no, 2);
        }
        e => panic!("unexpected {e}"),
    }
}

#[test]
fn an_oversized_batch_line_is_malformed_not_other() {
    let line = format!("{DECODE}, junk: {}", "9".repeat(70_000));
    let rec = parse_line(line.as_bytes(), 1);
    assert_eq!(
        rec.event,
        Event::Malformed {
            reason: "batch line longer than 64 KiB"
        }
    );
    let size = std::mem::size_of::<sglang_log::Record<'_>>();
    // the inline spans (3 x u16 each), the key slots, a layout's plan of the usual readings
    // (17 bytes) and the envelope: a record stays a few cache lines
    assert!(size <= 416, "Record is {size} bytes");
}

#[test]
fn an_empty_file_is_zero_lines_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.log");
    std::fs::write(&path, b"").unwrap();
    let mut n = 0;
    let stats = LogReader::open(&path)
        .unwrap()
        .for_each(|_| n += 1)
        .unwrap();
    assert_eq!(n, 0);
    assert_eq!(stats, sglang_log::ParseStats::default());
    // an empty gzip member is also zero lines
    let gz_path = dir.path().join("empty.log.gz");
    std::fs::write(&gz_path, gz(b"")).unwrap();
    let stats = LogReader::open(&gz_path).unwrap().for_each(|_| {}).unwrap();
    assert_eq!((stats.lines, stats.bytes), (0, 0));
}

#[test]
fn permission_denied_is_an_open_error_naming_the_path() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.log");
    std::fs::write(&path, format!("{DECODE}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&path).is_ok() {
        // running as root (CAP_DAC_OVERRIDE): mode 000 does not deny, so check the message the
        // reader builds from the OS error instead
        let e = ReadError::Open {
            path: path.clone(),
            source: std::io::Error::from_raw_os_error(13), // EACCES
        };
        let msg = e.to_string();
        assert!(
            msg.starts_with("cannot open ") && msg.contains("secret.log"),
            "{msg}"
        );
        assert!(msg.contains("Permission denied"), "{msg}");
        return;
    }
    match LogReader::open(&path) {
        Err(e @ ReadError::Open { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("secret.log"), "{msg}");
            assert!(msg.to_lowercase().contains("permission denied"), "{msg}");
        }
        Err(e) => panic!("unexpected {e}"),
        Ok(_) => panic!("opened an unreadable file"),
    }
}

#[test]
fn truncated_gzip_reports_the_compressed_byte_offset() {
    let text = format!("{DECODE}\n").repeat(5000);
    let full = gz(text.as_bytes());
    let cut = full.len() * 3 / 4;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.log.gz");
    std::fs::write(&path, &full[..cut]).unwrap();
    let mut lines = 0u64;
    let err = LogReader::open(&path)
        .unwrap()
        .for_each(|_| lines += 1)
        .unwrap_err();
    match &err {
        ReadError::Gzip {
            compressed_offset,
            line_no,
            ..
        } => {
            // the decoder fails at the end of what exists: every compressed byte was consumed
            assert_eq!(*compressed_offset, cut as u64);
            assert_eq!(*line_no, lines);
            assert!(lines > 0 && lines < 5000, "{lines}");
        }
        other => panic!("expected a gzip error, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("cut.log.gz") && msg.contains(&format!("near compressed byte {cut}")),
        "{msg}"
    );
}

/// The input ends inside a batch line (a copy of a log being written, `head -c`): outside live
/// mode that line is malformed with [`sglang_log::CUT_LAST_LINE_REASON`], since its last value
/// may be cut (`324.86` read as `3`); the same bytes with the newline are a batch line, an
/// unterminated line of no batch is read as it is, and live mode holds the tail back. The line
/// is real: `tests/data/real/019-…` (DP0, 92 running, 990 queued).
#[test]
fn a_batch_line_the_input_ends_inside_is_malformed() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().find(|l| l.contains("Decode batch")).unwrap();
    let cut = &line[..line.find("(token/s): 3").unwrap() + "(token/s): 3".len()];
    let read = |input: &str, live: bool| {
        let mut seen = Vec::new();
        let stats = LogReader::from_reader("cut", input.as_bytes())
            .live(live)
            .for_each(|rec| seen.push((rec.line_no, rec.event.name())))
            .unwrap();
        (seen, stats)
    };
    let (seen, stats) = read(&format!("{line}\n{cut}"), false);
    assert_eq!(seen, [(1, "batch"), (2, "malformed")]);
    assert_eq!(
        (stats.lines, stats.batch_lines, stats.malformed_lines),
        (2, 1, 1)
    );
    let m = &stats.malformed[0];
    assert_eq!((m.line_no, m.reason), (2, sglang_log::CUT_LAST_LINE_REASON));
    // with its newline the same bytes are a whole line: a batch line
    let (seen, _) = read(&format!("{line}\n{cut}\n"), false);
    assert_eq!(seen, [(1, "batch"), (2, "batch")]);
    // an unterminated line of no batch is read as it is
    let (seen, _) = read(&format!("{line}\n[2025-04-15 17:25:17] INFO: done"), false);
    assert_eq!(seen, [(1, "batch"), (2, "other")]);
    // live mode holds the cut line back for the next read
    let (seen, stats) = read(&format!("{line}\n{cut}"), true);
    assert_eq!(seen, [(1, "batch")]);
    assert_eq!(stats.held_back_bytes, cut.len() as u64);
}
