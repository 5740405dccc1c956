//! `LogReader` over arbitrary bytes delivered in arbitrary read sizes: never panics, never
//! loses a line (one record per `\n`-terminated line plus a final unterminated one), counts
//! every byte; live mode holds back exactly the unterminated tail; gzip input (magic `1f 8b`)
//! either decodes or fails with a `Gzip` error, never a panic.
//!
//! Input: byte 0 seeds the read sizes (1..=64 bytes per read, varying), the rest is the log;
//! with byte 0 = 0xFF the first line is repeated past the 1 MiB line cap.
//!
//! Speed (the target runs ~10^8 times): newlines are counted with `memchr`, not a byte loop in
//! instrumented code, and the blown-up line's first MiB less 4 KiB is handed out in reads of
//! 1–64 KiB instead of 1–64 bytes (the buffer still grows through every size); from 4 KiB
//! before the cap on, reads are 1–64 bytes again, so the cap is still reached in small reads,
//! for ~150 reads a pass instead of ~33,000.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sglang_log::{LogReader, ReadError};
use std::io::Read;

/// A reader that hands out its data in small, varying pieces.
struct Chunky<'a> {
    data: &'a [u8],
    seed: u8,
    /// Bytes still to hand out in KiB-sized pieces (the bulk of a blown-up first line).
    bulk: usize,
}

impl<'a> Chunky<'a> {
    fn new(data: &'a [u8], seed: u8, bulk: usize) -> Self {
        Chunky { data, seed, bulk }
    }
}

impl Read for Chunky<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.seed = self.seed.wrapping_mul(37).wrapping_add(11);
        let small = usize::from(self.seed % 64) + 1;
        let want = if self.bulk > 0 {
            self.bulk.min(small * 1024)
        } else {
            small
        };
        let n = want.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.bulk = self.bulk.saturating_sub(n);
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, log)) = data.split_first() else {
        return;
    };
    // seed 0xFF: the log's first line is blown up past the 1 MiB line cap (a sparse file, a
    // NUL hole), so the cut-and-skip path is fuzzed with the rest of the input behind it
    let owned;
    let mut bulk = 0;
    let log: &[u8] = if seed == 0xFF && !log.is_empty() {
        let cut = memchr::memchr(b'\n', log).unwrap_or(log.len());
        let mut v = log[..cut].repeat((sglang_log::MAX_LINE / cut.max(1)) + 2);
        v.extend_from_slice(&log[cut..]);
        owned = v;
        bulk = sglang_log::MAX_LINE - 4096;
        &owned
    } else {
        log
    };
    if log.starts_with(&[0x1f, 0x8b]) {
        let dec = flate2::read::MultiGzDecoder::new(Chunky::new(log, seed, bulk));
        let mut r = LogReader::from_reader("fuzz.gz", dec);
        match r.for_each(|_| {}) {
            Ok(_) | Err(ReadError::Read { .. }) | Err(ReadError::Gzip { .. }) => {}
            Err(e) => panic!("unexpected error {e}"),
        }
        return;
    }
    let newlines = memchr::memchr_iter(b'\n', log).count() as u64;
    let tail = log.len() - memchr::memrchr(b'\n', log).map_or(0, |p| p + 1);
    let expected = newlines + u64::from(tail > 0);

    let mut n = 0u64;
    let mut last = 0u64;
    let mut r = LogReader::from_reader("fuzz.log", Chunky::new(log, seed, bulk));
    let stats = r
        .for_each(|rec| {
            n += 1;
            assert_eq!(rec.line_no, last + 1, "line numbers must be consecutive");
            last = rec.line_no;
        })
        .expect("an in-memory reader cannot fail");
    assert_eq!(n, expected);
    assert_eq!(stats.lines, expected);
    assert_eq!(stats.bytes, log.len() as u64);
    assert_eq!(
        stats.lines,
        stats.events + stats.other_lines + stats.malformed_lines
    );
    assert_eq!(stats.batch_lines, stats.prefill_lines + stats.decode_lines);
    // a line cut at the cap is malformed; the rejected values are on batch lines
    assert!(stats.long_lines <= stats.malformed_lines);
    assert!(stats.rejected_lines <= stats.batch_lines);
    assert!(stats.rejected_fields >= stats.rejected_lines);

    // live mode: the unterminated tail is held back, everything before it delivered
    let mut live = LogReader::from_reader("fuzz.log", Chunky::new(log, seed, bulk)).live(true);
    let s = live
        .for_each(|_| {})
        .expect("an in-memory reader cannot fail");
    // (an unterminated tail that reached the 1 MiB cap is delivered as malformed, not held)
    let capped = tail >= sglang_log::MAX_LINE;
    assert_eq!(s.lines, newlines + u64::from(capped));
    assert_eq!(s.held_back_bytes, if capped { 0 } else { tail as u64 });
});
