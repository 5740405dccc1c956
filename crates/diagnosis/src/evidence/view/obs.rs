//! A scheduler's batch lines on a common footing ([`Obs`]): its decode and prefill lines
//! merged in time order ([`merged_obs`]).

use crate::evidence::{DecodeSample, PrefillSample, SchedulerTimeline};

/// One batch-line observation on a common footing (decode or prefill).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Obs {
    /// Seconds (log clock), when the line had a timestamp.
    pub t: Option<f64>,
    /// 1-based line number.
    pub line: u64,
    /// Its source (see [`DecodeSample::source`]): with `line`, what identifies the line in a
    /// scheduler joined from several files.
    pub source: u32,
    /// Whether it is a decode line (else prefill).
    pub decode: bool,
    /// `#running-req` (requests).
    pub running: Option<u64>,
    /// `#queue-req` (requests).
    pub queue: Option<u64>,
    /// `token usage` (fraction).
    pub usage: Option<f64>,
}

/// Decode and prefill lines of one scheduler merged in time order (then line order: rotated
/// parts joined into one scheduler restart their line numbers); lines without a time come
/// after the timed ones, in line order.
///
/// When the two timelines keep their lines at different strides (a long log keeps one decode
/// line in 64 but one prefill line in 8), the denser one is thinned to the coarser stride
/// first: each observation then stands for as many lines whatever its kind, and the gauges
/// over the merged list (running requests, token usage) do not lean to the kind kept more
/// densely (prefill lines report the batch right after admission).
pub fn merged_obs(s: &SchedulerTimeline) -> Vec<Obs> {
    let stride = s.decode.stride().max(s.prefill.stride());
    let d = s.decode.kept_at(stride).map(|d: &DecodeSample| Obs {
        t: d.t,
        line: d.line,
        source: d.source,
        decode: true,
        running: d.running,
        queue: d.queue,
        usage: d.usage,
    });
    let p = s.prefill.kept_at(stride).map(|p: &PrefillSample| Obs {
        t: p.t,
        line: p.line,
        source: p.source,
        decode: false,
        running: p.running,
        queue: p.queue,
        usage: p.usage,
    });
    let d: Vec<Obs> = d.collect();
    let p: Vec<Obs> = p.collect();
    let sorted = |s: &[Obs]| s.is_sorted_by(|a, b| obs_order(a, b).is_le());
    if sorted(&d) && sorted(&p) {
        // each in order already (the rule): merged, a decode line first on a tie, which is
        // the stable sort's order of the decode lines followed by the prefill lines
        return merge_obs(&d, &p);
    }
    let mut all = d;
    all.extend(p);
    all.sort_by(obs_order);
    all
}

/// The order of [`merged_obs`], a total order (a sort may panic on one that is not): timed
/// lines by time, then line; untimed lines after them, by line. Comparing a timed line with an
/// untimed one by line alone was not transitive once a scheduler held both (a time-only log
/// joined to dated ones), and the sort panicked.
fn obs_order(a: &Obs, b: &Obs) -> std::cmp::Ordering {
    match (a.t, b.t) {
        (Some(x), Some(y)) => x.total_cmp(&y).then(a.line.cmp(&b.line)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.line.cmp(&b.line),
    }
}

/// Two lists each in [`obs_order`] merged into one in that order, `a`'s item first where two
/// compare equal: the stable sort of `a` followed by `b`.
fn merge_obs(a: &[Obs], b: &[Obs]) -> Vec<Obs> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        if obs_order(y, x).is_lt() {
            out.push(*y);
            j += 1;
        } else {
            out.push(*x);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The merge of two ordered lists is the stable sort of the first followed by the second,
    /// ties between them (equal times and lines: two sources) and untimed lines included.
    #[test]
    fn merged_lists_are_the_stable_sort() {
        let obs = |i: u64, decode: bool| Obs {
            t: (!i.is_multiple_of(11)).then_some((i / 3) as f64),
            line: i % 5,
            source: u32::from(decode),
            decode,
            running: Some(i),
            queue: None,
            usage: None,
        };
        for (n, m) in [(0, 0), (0, 7), (9, 0), (40, 13), (200, 350)] {
            let mut a: Vec<Obs> = (0..n).map(|i| obs(i * 7 % 97, true)).collect();
            let mut b: Vec<Obs> = (0..m).map(|i| obs(i * 5 % 89, false)).collect();
            a.sort_by(obs_order);
            b.sort_by(obs_order);
            let mut want = a.clone();
            want.extend(b.iter().copied());
            want.sort_by(obs_order);
            assert_eq!(merge_obs(&a, &b), want);
        }
    }
}
