//! Byte-level screens shared by the line parsers: one pass of 16-byte SSE2 compares (the
//! x86_64 baseline; a portable loop elsewhere) where a `memmem` call per needle would cost
//! more than the line itself.

/// Whether `b` holds `atc` and whether it holds `sfe` (the needles that
/// [`crate::line`]'s keyword searches start from). One pass for both: on a short line the
/// set-up of two `memmem` searches costs more than this scan.
#[inline]
pub(crate) fn has_atc_sfe(b: &[u8]) -> (bool, bool) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if b.len() >= 18 {
        return has_atc_sfe_sse2(b);
    }
    has_atc_sfe_base(b)
}

/// [`has_atc_sfe`], byte by byte.
fn has_atc_sfe_base(b: &[u8]) -> (bool, bool) {
    let (mut atc, mut sfe) = (false, false);
    for w in b.windows(3) {
        atc |= w == b"atc";
        sfe |= w == b"sfe";
    }
    (atc, sfe)
}

/// [`has_atc_sfe`] for `b.len() >= 18`: at every 16-byte step the bytes at offsets 0, 1, 2
/// are compared with the needles' three bytes; the last step overlaps the one before it so
/// that every start position up to `len - 3` is seen.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline]
fn has_atc_sfe_sse2(b: &[u8]) -> (bool, bool) {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_setzero_si128,
    };
    // SAFETY: SSE2 is part of the x86_64 baseline (this cfg); every load reads 16 bytes inside
    // an 18-byte subslice `w` of `b` at offset 0, 1 or 2 (see below).
    unsafe {
        let n = b.len();
        let last = n - 18;
        let set = |c: u8| _mm_set1_epi8(c as i8);
        let (a, t, c) = (set(b'a'), set(b't'), set(b'c'));
        let (s, f, e) = (set(b's'), set(b'f'), set(b'e'));
        let (mut m1, mut m2) = (_mm_setzero_si128(), _mm_setzero_si128());
        let mut i = 0;
        loop {
            let i0 = i.min(last);
            let Some(w) = b.get(i0..i0 + 18) else {
                break; // ok: unreachable, i0 + 18 <= n
            };
            let p = w.as_ptr() as *const __m128i;
            // the three unaligned 16-byte loads read `w[0..16]`, `w[1..17]` and `w[2..18]`
            let (x0, x1, x2) = (
                _mm_loadu_si128(p),
                _mm_loadu_si128(p.byte_add(1)),
                _mm_loadu_si128(p.byte_add(2)),
            );
            let hit = |p0, p1, p2| {
                _mm_and_si128(
                    _mm_and_si128(_mm_cmpeq_epi8(x0, p0), _mm_cmpeq_epi8(x1, p1)),
                    _mm_cmpeq_epi8(x2, p2),
                )
            };
            m1 = _mm_or_si128(m1, hit(a, t, c));
            m2 = _mm_or_si128(m2, hit(s, f, e));
            if i0 == last {
                break;
            }
            i += 16;
        }
        (_mm_movemask_epi8(m1) != 0, _mm_movemask_epi8(m2) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector scan agrees with the byte loop on every length and at every needle position
    /// (start, middle, the last three bytes, across a 16-byte step), and on near misses.
    #[test]
    fn vector_scan_matches_the_byte_loop() {
        for n in 0..70usize {
            let base: Vec<u8> = (0..n).map(|i| b"xyzat sf ca tc fe"[i % 17]).collect();
            assert_eq!(has_atc_sfe(&base), has_atc_sfe_base(&base), "{n}");
            for at in 0..n.saturating_sub(2) {
                for needle in [b"atc", b"sfe", b"atd", b"sfx", b"xtc"] {
                    let mut v = base.clone();
                    v[at..at + 3].copy_from_slice(needle);
                    assert_eq!(has_atc_sfe(&v), has_atc_sfe_base(&v), "{n} {at} {needle:?}");
                }
                let mut v = base.clone();
                v[at..at + 3].copy_from_slice(b"atc");
                if at + 6 <= n {
                    v[at + 3..at + 6].copy_from_slice(b"sfe");
                    assert_eq!(has_atc_sfe(&v), (true, true));
                }
            }
        }
        assert_eq!(
            has_atc_sfe(b"[2026-01-15 08:00:02] Scheduler watchdog timeout"),
            (true, false)
        );
        assert_eq!(
            has_atc_sfe(b"[2026-01-15 08:00:02 TP0] KVTransferError: x"),
            (false, true)
        );
    }
}
