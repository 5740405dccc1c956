//! Frozen `#token` runs followed line by line as a scheduler's decode lines are read.
//!
//! The `stall` rule looks for consecutive decode lines with running requests and the same
//! `#token`. On a timeline that kept every line it reads them off the samples; once a long log's
//! timeline keeps one line in `stride`, two kept samples with the same `#token` say nothing of
//! the lines between them, so the runs are followed here, on every line of the kept TP rank, in
//! read order, in constant memory.

use serde::Serialize;

use super::{DecodeSample, Loc};
use crate::thresholds as th;

/// One run of consecutive decode lines with `#running-req` > 0 and the same `#token`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FrozenSpan {
    /// Its first line.
    pub first: Loc,
    /// Its last line.
    pub last: Loc,
    /// Seconds of its first line, when stamped.
    pub first_t: Option<f64>,
    /// Seconds of its last line, when stamped.
    pub last_t: Option<f64>,
    /// Decode lines in it.
    pub lines: u64,
    /// The frozen `#token` (tokens).
    pub tokens: u64,
    /// `#running-req` at its start (requests).
    pub running: u64,
    /// Whether every line after the first logged a gen throughput above `running` ×
    /// [`th::SLOW_DECODE_TOK_PER_REQ`] (the first line's reading may cover time before the run).
    pub moving: bool,
}

impl FrozenSpan {
    /// Seconds from its first to its last line, when both are stamped.
    pub fn duration_s(&self) -> Option<f64> {
        Some(self.last_t? - self.first_t?)
    }

    /// Whether it lasts at least [`th::STALL_MIN_S`].
    pub fn is_long(&self) -> bool {
        self.duration_s().is_some_and(|d| d >= th::STALL_MIN_S)
    }

    /// Whether the `stall` rule counts it: [`th::MIN_FROZEN_LINES`] lines, or two lines
    /// [`th::STALL_MIN_S`] apart.
    fn counts(&self) -> bool {
        self.lines >= th::MIN_FROZEN_LINES as u64 || (self.lines >= 2 && self.is_long())
    }

    /// Ordered by lines, then duration (the longer wins).
    fn longer_than(&self, o: &FrozenSpan) -> bool {
        (self.lines, self.duration_s().unwrap_or(0.0)) > (o.lines, o.duration_s().unwrap_or(0.0))
    }
}

/// The frozen runs of one scheduler's decode lines, in read order: the one open now, the
/// longest that counts, and whether any that counts lasted [`th::STALL_MIN_S`].
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct FrozenTracker {
    open: Option<FrozenSpan>,
    longest: Option<FrozenSpan>,
    any_long: bool,
    /// Some decode line was pushed.
    seen: bool,
    /// The run that began at the first line, once closed (`None`: the first line began none,
    /// or it is still open).
    head: Option<FrozenSpan>,
    /// The open run is the one that began at the first line.
    head_open: bool,
}

impl FrozenTracker {
    /// The next decode line: `#token`, `#running-req`, gen throughput (tok/s), its time
    /// (seconds) and place.
    #[inline]
    pub fn push(
        &mut self,
        tokens: Option<u64>,
        running: Option<u64>,
        gen_tps: Option<f64>,
        t: Option<f64>,
        at: Loc,
    ) {
        let first = !self.seen;
        self.seen = true;
        let (Some(tokens), Some(running)) = (tokens, running.filter(|&r| r > 0)) else {
            self.close();
            return;
        };
        if let Some(o) = &mut self.open
            && o.tokens == tokens
        {
            o.last = at;
            o.last_t = t;
            o.lines += 1;
            o.moving &= gen_tps.is_some_and(|g| g > o.running as f64 * th::SLOW_DECODE_TOK_PER_REQ);
            return;
        }
        self.close();
        self.head_open = first;
        self.open = Some(FrozenSpan {
            first: at,
            last: at,
            first_t: t,
            last_t: t,
            lines: 1,
            tokens,
            running,
            moving: true,
        });
    }

    /// Ends the open run.
    // inline: the usual run is dropped in a few instructions (a call cost ~15 a decode line)
    #[inline]
    fn close(&mut self) {
        // the usual run, one line or a few that do not count and not the first line's, is
        // dropped where it is (taking it out copied ~100 bytes a line)
        match &self.open {
            None => {}
            Some(o) if !self.head_open && !o.counts() => self.open = None,
            Some(_) => self.close_kept(),
        }
    }

    /// [`Self::close`] of a run that counts or began at the first line.
    #[inline(never)]
    fn close_kept(&mut self) {
        let Some(o) = self.open.take() else {
            return;
        };
        if std::mem::take(&mut self.head_open) {
            self.head = Some(o);
        }
        if !o.counts() {
            return;
        }
        self.any_long |= o.is_long();
        if self.longest.is_none_or(|l| o.longer_than(&l)) {
            self.longest = Some(o);
        }
    }

    /// The longest run that counts, the open one included.
    pub fn longest(&self) -> Option<FrozenSpan> {
        let mut t = *self;
        t.close();
        t.longest
    }

    /// Whether a run that counts lasted [`th::STALL_MIN_S`] or more, the open one included.
    pub fn any_long(&self) -> bool {
        let mut t = *self;
        t.close();
        t.any_long
    }

    /// Joins the runs of a later part of the same scheduler (its rotated log, read after this
    /// one): a run open at the end of this part that the later part's first run continues (the
    /// same `#token`) is one run. (Whether the later part's first line logged a healthy gen
    /// throughput is not known then: the joined run is moving when both parts' runs were.)
    pub fn append(&mut self, later: &FrozenTracker) {
        if !later.seen {
            return;
        }
        if !self.seen {
            *self = *later;
            return;
        }
        let head = if later.head_open {
            later.open
        } else {
            later.head
        };
        let joined = match (self.open, head) {
            (Some(a), Some(b)) if a.tokens == b.tokens => Some(FrozenSpan {
                last: b.last,
                last_t: b.last_t,
                lines: a.lines + b.lines,
                moving: a.moving && b.moving,
                ..a
            }),
            _ => None,
        };
        if let Some(j) = joined
            && later.head_open
        {
            // the later part is one run, still open: so is the joined one
            self.open = Some(j);
            return;
        }
        if joined.is_some() {
            self.open = joined;
        }
        self.close();
        // the later part's closed runs (its first one, if joined, is inside the joined run,
        // which is longer), then its open run, which a further part may continue
        self.any_long |= later.any_long;
        if let Some(l) = later.longest
            && self.longest.is_none_or(|m| l.longer_than(&m))
        {
            self.longest = Some(l);
        }
        self.open = later.open;
    }
}

/// A run of consecutive decode lines with running > 0 and the same `#token` (indices into the
/// decode samples).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrozenRun {
    /// First sample index.
    pub first: usize,
    /// Last sample index (inclusive).
    pub last: usize,
    /// The frozen `#token` (tokens).
    pub tokens: u64,
    /// `#running-req` at its start (requests).
    pub running: u64,
    /// Seconds from its first to its last line, when timestamped.
    pub duration_s: Option<f64>,
}

impl FrozenRun {
    /// Whether it lasts at least [`th::STALL_MIN_S`].
    pub fn is_long(&self) -> bool {
        self.duration_s.is_some_and(|d| d >= th::STALL_MIN_S)
    }
}

/// Frozen runs of a decode series that the `stall` rule counts: [`th::MIN_FROZEN_LINES`]
/// lines, or two lines [`th::STALL_MIN_S`] apart (on a timeline that kept every line; else
/// [`FrozenTracker`]).
pub fn frozen_runs(d: &[DecodeSample]) -> Vec<FrozenRun> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < d.len() {
        let (Some(tok), Some(run)) = (d[i].tokens, d[i].running) else {
            i += 1;
            continue;
        };
        if run == 0 {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < d.len() && d[j].tokens == Some(tok) && d[j].running.unwrap_or(0) > 0 {
            j += 1;
        }
        let duration_s = match (d[i].t, d[j - 1].t) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        let run_ = FrozenRun {
            first: i,
            last: j - 1,
            tokens: tok,
            running: run,
            duration_s,
        };
        let n = j - i;
        if n >= th::MIN_FROZEN_LINES || (n >= 2 && run_.is_long()) {
            out.push(run_);
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u64) -> Loc {
        Loc { source: 0, line }
    }

    /// Lines of (`#token`, `#running-req`, gen throughput, seconds).
    fn track(lines: &[(u64, u64, f64, f64)]) -> FrozenTracker {
        let mut t = FrozenTracker::default();
        for (i, &(tok, run, g, s)) in lines.iter().enumerate() {
            t.push(Some(tok), Some(run), Some(g), Some(s), at(i as u64 + 1));
        }
        t
    }

    #[test]
    fn the_longest_run_of_three_or_more_lines_is_kept() {
        let t = track(&[
            (10, 2, 50.0, 0.0),
            (10, 2, 0.0, 5.0),
            (10, 2, 0.0, 10.0),
            (20, 2, 50.0, 15.0),
            (30, 2, 50.0, 20.0),
            (30, 2, 0.0, 25.0),
            (30, 2, 0.0, 30.0),
            (30, 2, 0.0, 35.0),
        ]);
        let l = t.longest();
        assert_eq!(
            l.map(|l| (l.first, l.last, l.lines, l.tokens)),
            Some((at(5), at(8), 4, 30))
        );
        assert_eq!(l.and_then(|l| l.duration_s()), Some(15.0));
        assert_eq!(l.map(|l| l.moving), Some(false));
        assert!(!t.any_long());
    }

    #[test]
    fn two_lines_a_minute_apart_are_a_long_run_and_an_idle_line_ends_one() {
        let mut t = track(&[(64, 1, 80.0, 0.0), (64, 1, 80.0, 61.0)]);
        assert!(t.any_long());
        assert_eq!(t.longest().map(|l| (l.lines, l.moving)), Some((2, true)));
        // nothing running: the run ends; a new one of two short lines does not count
        t.push(Some(64), Some(0), Some(0.0), Some(62.0), at(3));
        t.push(Some(70), Some(1), Some(9.0), Some(63.0), at(4));
        t.push(Some(70), Some(1), Some(9.0), Some(64.0), at(5));
        assert_eq!(t.longest().map(|l| l.last), Some(at(2)));
    }

    /// `track` of lines numbered from `from`.
    fn track_from(from: u64, lines: &[(u64, u64, f64, f64)]) -> FrozenTracker {
        let mut t = FrozenTracker::default();
        for (i, &(tok, run, g, s)) in lines.iter().enumerate() {
            t.push(Some(tok), Some(run), Some(g), Some(s), at(from + i as u64));
        }
        t
    }

    #[test]
    fn a_run_across_two_parts_is_one_run() {
        // two frozen lines at the end of one part, two at the start of the next: four, 70 s
        let mut a = track_from(
            1,
            &[(9, 1, 50.0, 0.0), (5, 2, 0.0, 10.0), (5, 2, 0.0, 40.0)],
        );
        assert_eq!(a.longest(), None);
        let b = track_from(
            101,
            &[(5, 2, 0.0, 60.0), (5, 2, 0.0, 80.0), (6, 2, 50.0, 90.0)],
        );
        a.append(&b);
        let l = a.longest();
        assert_eq!(
            l.map(|l| (l.first, l.last, l.lines)),
            Some((at(2), at(102), 4))
        );
        assert_eq!(l.and_then(|l| l.duration_s()), Some(70.0));
        assert!(a.any_long());
    }

    #[test]
    fn a_part_that_is_one_run_carries_it_on_to_the_next() {
        let mut a = track_from(1, &[(5, 1, 0.0, 0.0)]);
        a.append(&track_from(11, &[(5, 1, 0.0, 1.0), (5, 1, 0.0, 2.0)]));
        a.append(&track_from(21, &[(5, 1, 0.0, 3.0), (8, 1, 0.0, 4.0)]));
        assert_eq!(
            a.longest().map(|l| (l.first, l.last, l.lines)),
            Some((at(1), at(21), 4))
        );
        // and a run open at the end of the last part stays open for the next
        a.append(&track_from(31, &[(8, 1, 0.0, 5.0), (8, 1, 0.0, 6.0)]));
        assert_eq!(
            a.longest().map(|l| (l.first, l.last, l.lines)),
            Some((at(1), at(21), 4))
        );
        a.append(&track_from(41, &[(8, 1, 0.0, 7.0), (8, 1, 0.0, 8.0)]));
        assert_eq!(
            a.longest().map(|l| (l.first, l.last, l.lines)),
            Some((at(22), at(42), 5))
        );
    }

    #[test]
    fn parts_joined_keep_the_longer_run() {
        let mut a = track(&[(5, 1, 1.0, 0.0), (5, 1, 1.0, 1.0), (5, 1, 1.0, 2.0)]);
        let b = track(&[
            (7, 1, 1.0, 10.0),
            (7, 1, 1.0, 11.0),
            (7, 1, 1.0, 12.0),
            (7, 1, 1.0, 13.0),
        ]);
        a.append(&b);
        assert_eq!(a.longest().map(|l| (l.tokens, l.lines)), Some((7, 4)));
    }
}
