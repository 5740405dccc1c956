//! A stable sort of weighted values by value, for the time-weighted quantiles.
//!
//! The quantiles sum the weights in value order, ties in sample order, so the sort must be
//! stable for the sums (and so the quantiles) to be the same on every run. The values are
//! sorted as `u64` keys whose unsigned order is [`f64::total_cmp`]'s (an integer compare). A
//! stable sort's order is unique, so any stable sort on the keys gives the comparison sort's
//! order, bit for bit; which one costs least depends on the readings:
//! - most gauges read few distinct values (request counts, two-decimal fractions): a counting
//!   sort over the distinct keys ([`by_distinct_keys`]: one pass that gives each reading its
//!   key's slot in a small hash table, a sort of the distinct keys only, one pass that places
//!   each reading after those of smaller keys and of its own key read before it);
//! - with more than [`MAX_DISTINCT`] distinct keys (rates), a bucket pass on the leading bits
//!   the keys do not all share, then each short bucket by insertion ([`by_leading_bits`]).
//!   (A least-significant-digit radix sort on the key bytes cost 1.7x as much on a gauge's
//!   six thousand rates: seven passes; the comparison sort 3x.)

/// `v`'s bits as a `u64` whose unsigned order is [`f64::total_cmp`]'s order of the values.
pub(crate) fn key(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// The value whose [`key`] is `k`.
pub(crate) fn value(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Sorts `(value, weight)` pairs by value in [`f64::total_cmp`] order, stably: pairs of equal
/// values (equal bits) keep their order, as `sort_by(|a, b| a.0.total_cmp(&b.0))` keeps them.
#[cfg(test)]
fn sort_by_value(pairs: &mut [(f64, f64)]) {
    let sorted = sorted_by_value(pairs.iter().copied(), pairs.len());
    for (p, &(k, w)) in pairs.iter_mut().zip(&sorted) {
        *p = (value(k), w);
    }
}

/// The `(value, weight)` pairs (at most `bound` of them) sorted by value in
/// [`f64::total_cmp`] order, stably (pairs of equal values keep their order), each value as its
/// [`key`] (read it back with [`value`]).
pub(crate) fn sorted_by_value(
    pairs: impl Iterator<Item = (f64, f64)>,
    bound: usize,
) -> Vec<(u64, f64)> {
    let mut keyed: Vec<(u64, f64)> = Vec::with_capacity(bound);
    keyed.extend(pairs.map(|(v, w)| (key(v), w)));
    sorted(keyed)
}

/// `(key, weight)` pairs (each value as its [`key`]) sorted by key, stably: the order of
/// [`sorted_by_value`].
pub(crate) fn sorted(mut keyed: Vec<(u64, f64)>) -> Vec<(u64, f64)> {
    by_distinct_keys(&keyed).unwrap_or_else(|| {
        if keyed.len() >= MIN_RADIX {
            by_leading_bits(keyed)
        } else {
            // equal keys are equal bits: a stable sort by key is the stable sort by total_cmp
            keyed.sort_by_key(|p| p.0);
            keyed
        }
    })
}

/// The fewest pairs [`by_leading_bits`] sorts: below it, the comparison sort costs less than
/// its 4,096 buckets.
const MIN_RADIX: usize = 256;

/// `keyed` sorted stably by key: placed stably by [`LEADING_BITS`] of the key bits after
/// those every key shares (readings of one magnitude share their sign, exponent and first
/// digits), so that each bucket holds a few pairs of close keys, then each bucket sorted
/// stably on its own (an insertion sort when short). Many distinct keys spread over few
/// buckets (keys that differ in low bits only) cost one more pass than the comparison sort.
fn by_leading_bits(mut keyed: Vec<(u64, f64)>) -> Vec<(u64, f64)> {
    let Some(&(first, _)) = keyed.first() else {
        return keyed;
    };
    let differ = keyed.iter().fold(0u64, |acc, p| acc | (p.0 ^ first));
    if differ == 0 {
        return keyed;
    }
    // the bucket is the LEADING_BITS bits from the first bit that differs
    let top = 63 - differ.leading_zeros();
    let shift = (top + 1).saturating_sub(LEADING_BITS);
    let mask = (1u64 << (top + 1 - shift)) - 1;
    let bucket = |k: u64| ((k >> shift) & mask) as usize;
    // each bucket's start, then (once its pairs are placed) its end: no second list of
    // starts (a 32 KB copy, counted a byte at a time under callgrind)
    let mut next = vec![0usize; (mask + 2) as usize];
    for &(k, _) in &keyed {
        next[bucket(k) + 1] += 1;
    }
    for i in 1..next.len() {
        next[i] += next[i - 1];
    }
    let mut out = slots(keyed.len());
    for &p in &keyed {
        let at = &mut next[bucket(p.0)];
        out[*at] = p;
        *at += 1;
    }
    // bucket i now ends where bucket i + 1 starts: `next[i]`; the first starts at 0
    let mut from = 0;
    for &to in &next[..next.len() - 1] {
        let b = &mut out[from..to];
        from = to;
        if b.len() <= SHORT_BUCKET {
            // stable: a pair moves left only past greater keys
            for i in 1..b.len() {
                let mut j = i;
                while j > 0 && b[j - 1].0 > b[j].0 {
                    b.swap(j - 1, j);
                    j -= 1;
                }
            }
        } else {
            b.sort_by_key(|p| p.0);
        }
    }
    keyed.clear();
    out
}

/// `n` placeholder pairs for a sort to place its pairs into, every one overwritten. Filled
/// with a pattern that is not one byte repeated, so that a vector loop writes it (~2
/// instructions a pair): zeroed memory is `memset`'s `rep stosb`, counted a byte at a time
/// under callgrind (16 a pair, ~0.09 M for a gauge of 5,900 readings).
fn slots(n: usize) -> Vec<(u64, f64)> {
    vec![(u64::MAX, 1.0); n]
}

/// How many leading differing bits of the keys pick a pair's bucket in [`by_leading_bits`]
/// (4,096 buckets: a gauge's few thousand readings, one or two a bucket when spread).
const LEADING_BITS: u32 = 12;

/// The longest bucket [`by_leading_bits`] sorts by insertion.
const SHORT_BUCKET: usize = 16;

/// The most distinct keys [`by_distinct_keys`] sorts (a request count or a two-decimal
/// fraction reads at most a few hundred); more, and the comparison sort is used.
const MAX_DISTINCT: usize = 512;

/// Slots of the open-addressing table of distinct keys: a power of two, at most half full.
const SLOTS: usize = 2 * MAX_DISTINCT;

/// `keyed` sorted stably by key with a counting sort over its distinct keys; `None` when it
/// holds more than [`MAX_DISTINCT`] of them (or more than `u32::MAX` pairs).
fn by_distinct_keys(keyed: &[(u64, f64)]) -> Option<Vec<(u64, f64)>> {
    u32::try_from(keyed.len()).ok()?;
    // the table: a slot's key and its index among the distinct keys in first-seen order
    // (a slot's key is read only once its id is set: any start will do, and one that is not
    // a byte repeated is written by a vector loop, not `memset`'s `rep stosb`, counted a byte
    // at a time under callgrind)
    let mut table_key = [1u64; SLOTS];
    let mut table_id = [u16::MAX; SLOTS];
    let mut distinct: Vec<u64> = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    // each pair's distinct-key index (first-seen order)
    let mut ids: Vec<u16> = Vec::with_capacity(keyed.len());
    let mut last: Option<(u64, u16)> = None;
    for &(k, _) in keyed {
        let id = match last {
            // readings repeat: the previous one's key, without a probe
            Some((lk, lid)) if lk == k => lid,
            _ => {
                // Fibonacci hashing: the top bits of the key times 2^64 / phi
                let mut slot = (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize % SLOTS;
                loop {
                    if table_id[slot] == u16::MAX {
                        if distinct.len() == MAX_DISTINCT {
                            return None;
                        }
                        let id = distinct.len() as u16;
                        table_key[slot] = k;
                        table_id[slot] = id;
                        distinct.push(k);
                        counts.push(0);
                        break id;
                    }
                    if table_key[slot] == k {
                        break table_id[slot];
                    }
                    slot = (slot + 1) % SLOTS;
                }
            }
        };
        last = Some((k, id));
        counts[usize::from(id)] += 1;
        ids.push(id);
    }
    // the distinct keys in order, and where each one's pairs start in the output
    let mut order: Vec<u16> = (0..distinct.len() as u16).collect();
    order.sort_unstable_by_key(|&id| distinct[usize::from(id)]);
    let mut next = vec![0u32; distinct.len()];
    let mut at = 0u32;
    for &id in &order {
        next[usize::from(id)] = at;
        at += counts[usize::from(id)];
    }
    // each pair after those of smaller keys and those of its key before it: stable
    let mut out = slots(keyed.len());
    for (&p, &id) in keyed.iter().zip(&ids) {
        let n = &mut next[usize::from(id)];
        out[*n as usize] = p;
        *n += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pairs: Vec<(f64, f64)>) {
        let mut want = pairs.clone();
        want.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut got = pairs;
        sort_by_value(&mut got);
        let bits = |s: &[(f64, f64)]| -> Vec<(u64, u64)> {
            s.iter().map(|p| (p.0.to_bits(), p.1.to_bits())).collect()
        };
        assert_eq!(bits(&got), bits(&want));
    }

    #[test]
    fn the_order_is_a_stable_comparison_sorts() {
        // request counts with many ties: the weights (the sample order) tell the ties apart
        let counts: Vec<(f64, f64)> = (0..5000)
            .map(|i| (((i * 7919) % 37) as f64, i as f64))
            .collect();
        check(counts);
        // two-decimal fractions, rates, signed values, zeros of both signs, infinities
        let mixed: Vec<(f64, f64)> = (0..3000)
            .map(|i| {
                let x = ((i * 104_729) % 1000) as f64;
                let v = match i % 6 {
                    0 => (x / 100.0).round() / 10.0,
                    1 => x * 3.7 + 0.123,
                    2 => -x / 7.0,
                    3 => 0.0,
                    4 => -0.0,
                    _ if i % 12 == 5 => f64::INFINITY,
                    _ => f64::NEG_INFINITY,
                };
                (v, i as f64)
            })
            .collect();
        check(mixed);
        // one value only, and short lists
        check(vec![(2.5, 1.0); 100]);
        check((0..10).map(|i| ((10 - i) as f64, i as f64)).collect());
        check(Vec::new());
    }

    /// The comparison sort's order of `keyed`, the order of record.
    fn compared(keyed: &[(u64, f64)]) -> Vec<(u64, u64)> {
        let mut want = keyed.to_vec();
        want.sort_by_key(|p| p.0);
        want.iter().map(|p| (p.0, p.1.to_bits())).collect()
    }

    #[test]
    fn the_counting_sort_orders_as_the_comparison_sort() {
        // counts with ties in every order (the weights tell the ties apart), runs of one value,
        // colliding and adjacent keys, and as many distinct keys as it takes
        let cases: Vec<Vec<(f64, f64)>> = vec![
            (0..6000)
                .map(|i| (((i * 7919) % 85) as f64, i as f64))
                .collect(),
            (0..6000).map(|i| ((i / 50) as f64, -(i as f64))).collect(),
            (0..4000)
                .map(|i| (((i * 31) % 25) as f64 / 100.0, (i % 7) as f64))
                .collect(),
            (0..MAX_DISTINCT)
                .rev()
                .map(|i| (i as f64 * 0.5, i as f64))
                .collect(),
            vec![(1.0, 2.0); 3],
            vec![
                (-0.0, 1.0),
                (0.0, 2.0),
                (-0.0, 3.0),
                (f64::NAN, 4.0),
                (f64::INFINITY, 5.0),
            ],
            Vec::new(),
        ];
        for pairs in cases {
            let keyed: Vec<(u64, f64)> = pairs.iter().map(|&(v, w)| (key(v), w)).collect();
            let got = by_distinct_keys(&keyed).expect("few distinct keys");
            let got: Vec<(u64, u64)> = got.iter().map(|p| (p.0, p.1.to_bits())).collect();
            assert_eq!(got, compared(&keyed));
        }
    }

    #[test]
    fn more_distinct_keys_than_the_table_holds_fall_back_to_the_comparison_sort() {
        let pairs: Vec<(f64, f64)> = (0..=MAX_DISTINCT)
            .map(|i| (((i * 104_729) % 7919) as f64 * 1.37, i as f64))
            .collect();
        let keyed: Vec<(u64, f64)> = pairs.iter().map(|&(v, w)| (key(v), w)).collect();
        assert!(by_distinct_keys(&keyed).is_none());
        let buckets = by_leading_bits(keyed.clone());
        let buckets: Vec<(u64, u64)> = buckets.iter().map(|p| (p.0, p.1.to_bits())).collect();
        assert_eq!(buckets, compared(&keyed));
        let got = sorted_by_value(pairs.iter().copied(), pairs.len());
        let got: Vec<(u64, u64)> = got.iter().map(|p| (p.0, p.1.to_bits())).collect();
        assert_eq!(got, compared(&keyed));
    }

    proptest::proptest! {
        /// On any values, few or many distinct, the order is the comparison sort's, bit for
        /// bit (the fast path when it applies, and through `sorted_by_value` either way).
        #[test]
        fn any_values_sort_as_the_comparison_sort(
            levels in proptest::collection::vec(0u16..700, 0..2000),
            scale in proptest::prop_oneof![proptest::strategy::Just(1.0f64), 0.01f64..1e4],
        ) {
            let pairs: Vec<(f64, f64)> = levels
                .iter()
                .enumerate()
                .map(|(i, &l)| (f64::from(l) * scale - 3.0, i as f64))
                .collect();
            let keyed: Vec<(u64, f64)> = pairs.iter().map(|&(v, w)| (key(v), w)).collect();
            let want = compared(&keyed);
            let buckets = by_leading_bits(keyed.clone());
            let buckets: Vec<(u64, u64)> = buckets.iter().map(|p| (p.0, p.1.to_bits())).collect();
            proptest::prop_assert_eq!(buckets, want.clone());
            if let Some(got) = by_distinct_keys(&keyed) {
                let got: Vec<(u64, u64)> = got.iter().map(|p| (p.0, p.1.to_bits())).collect();
                proptest::prop_assert_eq!(got, want.clone());
            }
            let got = sorted_by_value(pairs.iter().copied(), pairs.len());
            let got: Vec<(u64, u64)> = got.iter().map(|p| (p.0, p.1.to_bits())).collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn keys_order_as_total_cmp_and_return_the_value() {
        let vs = [
            f64::NEG_INFINITY,
            -3.5,
            -0.0,
            0.0,
            1e-300,
            0.01,
            2.0,
            f64::MAX,
        ];
        for w in vs.windows(2) {
            assert!(key(w[0]) < key(w[1]), "{w:?}");
        }
        for v in vs {
            assert_eq!(value(key(v)).to_bits(), v.to_bits());
        }
    }
}
