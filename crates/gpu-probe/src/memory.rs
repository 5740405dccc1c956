//! What "used" means, whatever the source: allocated memory without the driver's reserve.

/// `used` without the driver's reserve, and whether the source's figure held the reserve.
///
/// NVML's v2 call and `nvidia-smi` report used apart from reserved: total = reserved + used +
/// free (to the byte through NVML on an H200 with driver 580.159.04; `nvidia-smi` rounds each
/// figure up to MiB, so its sum can exceed the total by a MiB or two). NVML's v1 call, and the
/// R525 documentation of v2, count reserved inside used: total = used + free. Whichever sum
/// lands nearer the total says which meaning the figures have; only in the second case is the
/// reserve taken out (`true`). Without a reserve figure, or a zero one, `used` is kept.
pub(crate) fn used_apart_from_reserved(
    total: u64,
    used: u64,
    free: u64,
    reserved: Option<u64>,
) -> (u64, bool) {
    let Some(r) = reserved.filter(|&r| r > 0 && used >= r) else {
        return (used, false);
    };
    let apart = total.abs_diff(used.saturating_add(r).saturating_add(free));
    let within = total.abs_diff(used.saturating_add(free));
    if within < apart {
        (used - r, true)
    } else {
        (used, false)
    }
}

/// The note for a GPU whose used figure held the reserve (see [`used_apart_from_reserved`]).
pub(crate) fn reserve_taken_out_note(index: u32, reserved: u64) -> String {
    format!(
        "GPU {index}: used held the {} MiB reserved (used + free = total, NVML v1's meaning); \
         the reserve was taken out of used, as NVML v2 and nvidia-smi count it",
        reserved.div_ceil(crate::MIB)
    )
}

#[cfg(test)]
mod tests {
    use super::used_apart_from_reserved;
    use crate::MIB;

    /// Bytes NVML v2 returned on a real H200 (driver 580.159.04), idle and with 20 GiB held by
    /// PyTorch: total = reserved + used + free exactly, so nothing changes.
    #[test]
    fn real_h200_nvml_v2_figures_are_kept() {
        let (total, reserved) = (150_754_820_096, 644_939_776);
        assert_eq!(
            used_apart_from_reserved(total, 0, 150_109_880_320, Some(reserved)),
            (0, false)
        );
        assert_eq!(
            used_apart_from_reserved(total, 22_123_708_416, 127_986_171_904, Some(reserved)),
            (22_123_708_416, false)
        );
        // nvidia-smi -q of the same moments, rounded up to MiB (their sum is 1-2 MiB over)
        assert_eq!(
            used_apart_from_reserved(143_771 * MIB, 0, 143_156 * MIB, Some(616 * MIB)),
            (0, false)
        );
        assert_eq!(
            used_apart_from_reserved(143_771 * MIB, 21_099 * MIB, 122_058 * MIB, Some(616 * MIB)),
            (21_099 * MIB, false)
        );
    }

    #[test]
    fn a_used_that_holds_the_reserve_loses_it() {
        // v1's meaning: used = reserved + allocated, total = used + free
        assert_eq!(
            used_apart_from_reserved(143_771 * MIB, 616 * MIB, 143_155 * MIB, Some(616 * MIB)),
            (0, true)
        );
        assert_eq!(
            used_apart_from_reserved(81_559 * MIB, 72_590 * MIB, 8_969 * MIB, Some(579 * MIB)),
            (72_011 * MIB, true)
        );
    }

    #[test]
    fn no_or_zero_reserve_or_a_used_below_it_is_kept() {
        assert_eq!(used_apart_from_reserved(100, 40, 60, None), (40, false));
        assert_eq!(used_apart_from_reserved(100, 40, 60, Some(0)), (40, false));
        // a used smaller than the reserve cannot hold it
        assert_eq!(used_apart_from_reserved(100, 5, 95, Some(10)), (5, false));
    }
}
