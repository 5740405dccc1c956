//! `parallel::parse_file_parallel` and `parallel::parse_ranges_in_order`: a file split at line
//! boundaries and parsed on threads gives, merged in order, exactly what one sequential read
//! gives (records, line numbers, counts), from a log built of the real test logs.

use sglang_log::LogReader;
use sglang_log::parallel::{
    MIN_CHUNK, SPARE_CHUNKS, merged_stats, parse_file_parallel, parse_files_in_order,
    parse_ranges_in_order, split_at_lines, split_every,
};

/// What a record contributes to the comparison.
fn key(rec: &sglang_log::Record<'_>) -> (u64, &'static str, Option<u64>, Option<String>) {
    (
        rec.line_no,
        rec.event.name(),
        rec.event.as_batch().and_then(|b| b.running_req()),
        rec.timestamp.map(|t| t.to_string()),
    )
}

/// Chunk (or file) states begun and not yet merged, and the most there ever were at once.
#[derive(Default)]
struct States {
    alive: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
}

impl States {
    fn begin(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        let n = self.alive.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(n, SeqCst);
    }

    fn end(&self) {
        self.alive.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn most(&self) -> usize {
        self.most.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The real logs of `tests/data/real`, concatenated until the file holds more than `bytes`,
/// with a malformed long line and an impossible value inside, and no newline at the end.
fn build_log(bytes: u64) -> Vec<u8> {
    let files = real_logs();
    let mut out = Vec::new();
    let mut round = 0;
    while (out.len() as u64) < bytes {
        for f in &files {
            out.extend(std::fs::read(f).unwrap());
            if !out.ends_with(b"\n") {
                out.push(b'\n');
            }
        }
        if round == 1 {
            out.extend(vec![b'x'; 2 << 20]);
            out.extend(b"\n[2025-04-15 17:25:16 DP0 TP0] Decode batch. #running-req: 92, #token: 264288, token usage: 0.92, gen throughput (token/s): NaN, #queue-req: 990, \n");
        }
        round += 1;
    }
    out.extend(b"[2025-04-15 17:25:17 DP0 TP0] Decode batch. #running-req: 93, #token: 264300, token usage: 0.92, gen throughput (token/s): 325.00, #queue-req: 989");
    out
}

#[test]
fn chunks_merged_in_order_equal_one_sequential_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.log");
    std::fs::write(&path, build_log(4 * MIN_CHUNK + 12345)).unwrap();

    let mut seq = Vec::new();
    let seq_stats = LogReader::open(&path)
        .unwrap()
        .for_each(|r| seq.push(key(r)))
        .unwrap();

    for threads in [2, 3, 4] {
        let ranges = split_at_lines(&path, threads).unwrap();
        assert_eq!(ranges.len(), threads, "{ranges:?}");
        let chunks = parse_file_parallel(&path, threads, Vec::new, |v, r| v.push(key(r))).unwrap();
        assert_eq!(chunks.len(), threads);
        let par: Vec<_> = chunks
            .iter()
            .flat_map(|c| c.state.iter().cloned())
            .collect();
        assert_eq!(par.len(), seq.len());
        assert!(par == seq, "records differ with {threads} threads");
        let st = merged_stats(&chunks);
        assert_eq!(
            (
                st.lines,
                st.bytes,
                st.batch_lines,
                st.decode_lines,
                st.other_lines
            ),
            (
                seq_stats.lines,
                seq_stats.bytes,
                seq_stats.batch_lines,
                seq_stats.decode_lines,
                seq_stats.other_lines
            )
        );
        assert_eq!(st.malformed, seq_stats.malformed);
        assert_eq!(st.rejected, seq_stats.rejected);
        assert_eq!((st.long_lines, st.rejected_fields), (1, 1));
        assert_eq!(st.head, seq_stats.head);
        // each chunk starts at a line start, right after the previous one
        for w in chunks.windows(2) {
            assert_eq!(w[0].bytes.end, w[1].bytes.start);
            assert_eq!(w[0].lines_before + w[0].stats.lines, w[1].lines_before);
        }
    }
}

/// Many more chunks than threads: each thread parses chunk after chunk with one reader (its
/// buffer, cache and newline bitmap kept), and what it read before must not leak into the next
/// chunk: the 2 MiB line cut at the cap, whose rest is skipped, ends inside one chunk; the
/// next chunk starts afresh at line 1; only the first chunk reports the file's head. The
/// calling thread parses too, and no more than `threads + SPARE_CHUNKS` chunk states are held
/// at once.
#[test]
fn many_chunks_on_few_threads_equal_one_sequential_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.log");
    std::fs::write(&path, build_log(3 * MIN_CHUNK)).unwrap();

    let mut seq = Vec::new();
    let seq_stats = LogReader::open(&path)
        .unwrap()
        .for_each(|r| seq.push(key(r)))
        .unwrap();

    let ranges = split_every(&path, 256 << 10).unwrap();
    assert!(ranges.len() >= 40, "{} chunks", ranges.len());
    for threads in [1, 2, 3] {
        let mut par = Vec::new();
        let mut chunks = 0;
        let states = States::default();
        let st = parse_ranges_in_order(
            &path,
            &ranges,
            threads,
            || {
                states.begin();
                Vec::new()
            },
            |v, r, _raw| v.push(key(r)),
            |v: Vec<_>, lines_before| {
                states.end();
                chunks += 1;
                par.extend(v.into_iter().map(|mut k: (u64, _, _, _)| {
                    k.0 += lines_before;
                    k
                }));
            },
        )
        .unwrap();
        assert_eq!(chunks, ranges.len());
        // the memory bound: at most `threads + SPARE_CHUNKS` chunk states at a time
        let most = states.most();
        assert!(
            most <= threads + SPARE_CHUNKS,
            "{most} states alive with {threads} threads"
        );
        assert_eq!(par.len(), seq.len(), "{threads} threads");
        assert!(par == seq, "records differ with {threads} threads");
        assert_eq!(
            (
                st.lines,
                st.bytes,
                st.batch_lines,
                st.long_lines,
                st.rejected_fields
            ),
            (
                seq_stats.lines,
                seq_stats.bytes,
                seq_stats.batch_lines,
                seq_stats.long_lines,
                seq_stats.rejected_fields
            )
        );
        assert_eq!((st.long_lines, st.rejected_fields), (1, 1));
        assert_eq!(st.malformed, seq_stats.malformed);
        assert_eq!(st.rejected, seq_stats.rejected);
        assert_eq!(st.head, seq_stats.head);
    }
}

#[test]
fn small_and_gzip_files_are_one_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.log");
    std::fs::write(&small, b"[2025-04-15 17:25:16] Decode batch. #running-req: 1, #token: 5, token usage: 0.01, gen throughput (token/s): 1.00, #queue-req: 0\n").unwrap();
    let chunks = parse_file_parallel(&small, 8, || 0u64, |n, _| *n += 1).unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].state, 1);
    let gz = dir.path().join("x.log.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &build_log(MIN_CHUNK * 2)).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    assert_eq!(split_at_lines(&gz, 4).unwrap().len(), 1);
    let chunks = parse_file_parallel(&gz, 4, || 0u64, |n, _| *n += 1).unwrap();
    assert_eq!(chunks.len(), 1);
    assert!(chunks[0].state > 10_000);
}

/// The real logs of `tests/data/real`, sorted: many small files, as a job directory holds.
fn real_logs() -> Vec<std::path::PathBuf> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/real");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    files.sort();
    files
}

/// Many small files read a file per thread come back in the order given, each with the
/// records and counts of its own sequential read, on 1, 2 and 3 threads; at most `threads +
/// SPARE_CHUNKS` files' states are held at once.
#[test]
fn small_files_on_threads_come_back_in_order_as_read_alone() {
    let files = real_logs();
    assert!(files.len() >= 20, "{}", files.len());
    let alone: Vec<(Vec<_>, u64, u64)> = files
        .iter()
        .map(|f| {
            let mut recs = Vec::new();
            let st = LogReader::open(f)
                .unwrap()
                .for_each(|r| recs.push(key(r)))
                .unwrap();
            (recs, st.lines, st.batch_lines)
        })
        .collect();
    for threads in [1, 2, 3] {
        let states = States::default();
        let mut got = Vec::new();
        parse_files_in_order(
            &files,
            threads,
            || {
                states.begin();
                Vec::new()
            },
            |v, r, _raw| v.push(key(r)),
            |k, res| {
                states.end();
                let (recs, st) = res.unwrap();
                got.push((k, (recs, st.lines, st.batch_lines)));
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        let order: Vec<usize> = got.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            order,
            (0..files.len()).collect::<Vec<_>>(),
            "{threads} threads"
        );
        for ((_, g), (a, f)) in got.iter().zip(alone.iter().zip(&files)) {
            assert!(g == a, "{} on {threads} threads", f.display());
        }
        let most = states.most();
        assert!(
            most <= threads + SPARE_CHUNKS,
            "{most} states with {threads} threads"
        );
    }
}

/// A file that cannot be read is handed to the merge in its turn, after the files before it;
/// a merge that stops (returns its error) ends the reading at once, on any number of threads.
#[test]
fn a_failed_file_comes_in_its_turn_and_a_stopped_merge_ends_the_read() {
    let mut files = real_logs();
    files.insert(5, std::path::PathBuf::from("/nonexistent/dir/rank5.log"));
    for threads in [1, 2, 3] {
        let mut seen = Vec::new();
        let r = parse_files_in_order(
            &files,
            threads,
            || 0u64,
            |n, _r, _raw| *n += 1,
            |k, res| match res {
                Ok((n, st)) => {
                    assert_eq!(n, st.lines);
                    seen.push(k);
                    Ok(())
                }
                Err(e) => Err((k, e.to_string())),
            },
        );
        let (k, e) = r.unwrap_err();
        assert_eq!(k, 5, "{threads} threads");
        assert!(e.contains("/nonexistent/dir/rank5.log"), "{e}");
        assert_eq!(seen, (0..5).collect::<Vec<_>>(), "{threads} threads");
    }
}

#[test]
fn cuts_inside_long_lines_end_at_their_newline() {
    // lines of 1 to 40 KiB: most cuts land inside a line that the 4 KiB reads of the cut
    // have to follow over several pieces
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long-lines.log");
    let mut text = Vec::new();
    let mut starts = vec![0u64];
    for i in 0..400u64 {
        let n = 1024 + (i * 7919) % (40 << 10);
        text.extend(std::iter::repeat_n(b'x', n as usize));
        text.push(b'\n');
        starts.push(text.len() as u64);
    }
    std::fs::write(&path, &text).unwrap();
    let ranges = split_every(&path, 64 << 10).unwrap();
    assert!(ranges.len() >= 100, "{} chunks", ranges.len());
    assert_eq!(ranges.first().map(|r| r.start), Some(0));
    assert_eq!(ranges.last().map(|r| r.end), Some(text.len() as u64));
    for w in ranges.windows(2) {
        assert_eq!(w[0].end, w[1].start);
        // every cut is the start of a line
        assert!(
            starts.binary_search(&w[1].start).is_ok(),
            "cut at {}",
            w[1].start
        );
    }
}
