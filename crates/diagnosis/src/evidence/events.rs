//! Counted events between the batch lines: retractions (deduplicated across TP ranks, a
//! bounded sample with exact totals) and counted failure lines.

use serde::Serialize;

#[cfg(doc)]
use super::Evidence;
use super::Loc;
use super::scheduler::max_opt;

/// A retraction, deduplicated across TP ranks (every TP rank prints the same line; spec §1.3).
#[derive(Clone, Debug, Serialize)]
pub struct RetractionEvent {
    /// Seconds, if the line had a timestamp.
    pub t: Option<f64>,
    /// Where it was first seen.
    pub loc: Loc,
    /// `#retracted_reqs` (requests).
    pub retracted_reqs: Option<u64>,
    /// `#new_tokens_gained` (KV slots freed, tokens), v0.5.7+.
    pub new_tokens_gained: Option<u64>,
    /// `#new_token_ratio` before the retraction.
    pub ratio_before: Option<f64>,
    /// `#new_token_ratio` after the retraction.
    pub ratio_after: Option<f64>,
    /// How many rank lines reported this same event.
    pub ranks_reporting: u32,
}

/// Retraction events kept as a sample before older ones are thinned (events).
pub const MAX_RETRACTION_SAMPLES: usize = 4096;
/// The most recent events that thinning never touches: the window in which other TP ranks'
/// lines of the same event are matched to it (events).
pub(super) const RECENT_RETRACTIONS: usize = 64;

/// One source's share of the retraction totals ([`Evidence::retractions_by_source`]).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SourceRetractions {
    /// Its deduplicated events.
    pub totals: RetractionTotals,
    /// Its retraction lines (all ranks).
    pub lines: u64,
}

/// Exact totals over every deduplicated retraction event, however many are kept as samples.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct RetractionTotals {
    /// Deduplicated events.
    pub events: u64,
    /// Sum of `#retracted_reqs` (requests).
    pub retracted_reqs: u64,
    /// Sum of `#new_tokens_gained` (KV slots freed, tokens), when any line reports it.
    pub tokens_freed: Option<u64>,
    /// Highest `#new_token_ratio` after a retraction.
    pub max_ratio_after: Option<f64>,
    /// Time of the first and last event (seconds), when timestamped.
    pub time_span: Option<(f64, f64)>,
    /// The first retraction line of any rank.
    pub first_line: Option<Loc>,
    /// The last retraction line of any rank (duplicates included).
    pub last_line: Option<Loc>,
}

impl RetractionTotals {
    /// Count one new (deduplicated) event.
    pub(super) fn add(&mut self, e: &RetractionEvent) {
        self.events += 1;
        self.retracted_reqs += e.retracted_reqs.unwrap_or(0);
        if let Some(n) = e.new_tokens_gained {
            self.tokens_freed = Some(self.tokens_freed.unwrap_or(0) + n);
        }
        self.max_ratio_after = max_opt(self.max_ratio_after, e.ratio_after);
        if let Some(t) = e.t.filter(|t| t.is_finite()) {
            self.time_span = Some(match self.time_span {
                Some((a, b)) => (a.min(t), b.max(t)),
                None => (t, t),
            });
        }
        self.note_line(e.loc);
    }

    /// Note a retraction line (a new event or another rank's copy of one).
    pub(super) fn note_line(&mut self, loc: Loc) {
        self.first_line.get_or_insert(loc);
        self.last_line = Some(loc);
    }

    /// Adds the totals of events read after these (another source's, read later).
    pub fn merge(&mut self, o: &RetractionTotals) {
        self.events += o.events;
        self.retracted_reqs += o.retracted_reqs;
        if let Some(n) = o.tokens_freed {
            self.tokens_freed = Some(self.tokens_freed.unwrap_or(0) + n);
        }
        self.max_ratio_after = max_opt(self.max_ratio_after, o.max_ratio_after);
        // the first and last lines by time when both are timed (sources are not read in time
        // order: rotated parts of a directory), else in the order given
        let (earlier, later) = match (self.time_span, o.time_span) {
            (Some((a, b)), Some((c, d))) => (c < a, d >= b),
            _ => (false, true),
        };
        self.time_span = match (self.time_span, o.time_span) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, None) => x,
            (None, y) => y,
        };
        if self.first_line.is_none() || (earlier && o.first_line.is_some()) {
            self.first_line = o.first_line;
        }
        if o.last_line.is_some() && later {
            self.last_line = o.last_line;
        }
    }

    /// Totals over a list of events (used when a time window cuts the kept sample).
    pub fn of(events: &[RetractionEvent]) -> Self {
        let mut t = Self::default();
        for e in events {
            t.add(e);
        }
        t
    }
}

/// A counted kind of failure line (watchdog timeout, KV transfer failure).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FailureLines {
    /// How many lines (all ranks).
    pub count: u64,
    /// The first one.
    pub first: Option<Loc>,
    /// Its message, shortened to 200 characters.
    pub first_text: Option<String>,
}

impl FailureLines {
    pub(super) fn note(&mut self, loc: Loc, text: &str) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(loc);
            self.first_text = Some(text.chars().take(200).collect());
        }
    }
}

/// How the server's processes stopped, as the log says it (`sglang_log::Signal`): the first
/// SIGTERM, the first SIGQUIT and the first child exit, each with its line.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Shutdown {
    /// `SIGTERM received`: a stop was asked for.
    pub sigterm: Option<Loc>,
    /// `SIGQUIT received … It usually means one child failed`.
    pub sigquit: Option<Loc>,
    /// `Subprocess … crashed with exit code C`: where, and `C`.
    pub child_exit: Option<(Loc, Option<i64>)>,
    /// `kill_process_tree called`: the launcher killed its process tree.
    pub kill_tree: Option<Loc>,
    /// `No live scheduler processes found`: every scheduler was already dead when the crash
    /// handler looked.
    pub no_live_schedulers: Option<Loc>,
}

impl Shutdown {
    /// Takes one signal line.
    pub(super) fn note(&mut self, loc: Loc, s: sglang_log::Signal) {
        match s {
            sglang_log::Signal::Sigterm => {
                self.sigterm.get_or_insert(loc);
            }
            sglang_log::Signal::Sigquit => {
                self.sigquit.get_or_insert(loc);
            }
            sglang_log::Signal::ChildExited(code) => {
                self.child_exit.get_or_insert((loc, code));
            }
            sglang_log::Signal::KillProcessTree => {
                self.kill_tree.get_or_insert(loc);
            }
            sglang_log::Signal::NoLiveSchedulers => {
                self.no_live_schedulers.get_or_insert(loc);
            }
        }
    }
}
