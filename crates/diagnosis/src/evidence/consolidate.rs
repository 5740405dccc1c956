//! Copies of the evidence made for a diagnosis: the schedulers that several files describe
//! joined and put in time order ([`Evidence::consolidated`]), a recent window
//! ([`Evidence::since`]) and a scheduler from `/metrics` polls
//! ([`Evidence::with_metrics_scheduler`]).

use std::collections::BTreeMap;

use serde::Serialize;

#[cfg(doc)]
use super::runs;
use super::{
    Aggregates, DecodeSample, Evidence, Loc, PrefillSample, RetractionEvent, RetractionTotals,
    SchedulerKey, SchedulerTimeline, SourceId, SourceInfo, Timeline, timeline,
};
use crate::report::InputKind;

/// What [`Evidence::consolidated`] joined.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JoinNote {
    /// `file` repeats `of` (the same lines): counted once.
    Repeats {
        /// The repeating file.
        file: String,
        /// The file it repeats.
        of: String,
    },
    /// `file` continues `of` in time (rotated parts): one scheduler.
    Continues {
        /// The later part.
        file: String,
        /// The earlier part.
        of: String,
    },
    /// `file` overlaps `of` with the same lines (a part cut with overlap, another TP rank's
    /// copy): one scheduler, each line counted once.
    Overlaps {
        /// The later file.
        file: String,
        /// The file it overlaps.
        of: String,
    },
    /// Lines of a scheduler were out of time order by less than the jitter window and were
    /// put in order.
    Reordered {
        /// The scheduler.
        scheduler: SchedulerKey,
        /// Steps back in time between consecutive lines.
        steps_back: usize,
    },
    /// The clock of a scheduler steps back by more than the jitter window: a restart or a
    /// second run; only the last run is diagnosed.
    EarlierRunsSetAside {
        /// The scheduler.
        scheduler: SchedulerKey,
        /// Runs seen.
        runs: usize,
        /// Seconds the clock stepped back at the last restart.
        step_back_s: f64,
        /// First line of the run kept.
        from_line: u64,
    },
}

impl Evidence {
    /// A copy keeping only what happened at or after `from` (seconds): live mode judges the
    /// recent past, not the whole history. Untimed samples are kept; peaks are recomputed over
    /// what is kept.
    pub fn since(&self, from: f64) -> Evidence {
        let mut ev = self.clone();
        let keep = |t: Option<f64>| t.is_none_or(|t| t >= from);
        for tl in ev.schedulers.values_mut() {
            let decode: Vec<DecodeSample> = tl
                .decode
                .samples()
                .iter()
                .copied()
                .filter(|d| keep(d.t))
                .collect();
            let prefill: Vec<PrefillSample> = tl
                .prefill
                .samples()
                .iter()
                .copied()
                .filter(|p| keep(p.t))
                .collect();
            tl.decode = Timeline::default();
            tl.prefill = Timeline::default();
            tl.agg = Aggregates::default();
            for d in decode {
                tl.push_decode(d);
            }
            for p in prefill {
                tl.push_prefill(p);
            }
        }
        ev.schedulers
            .retain(|_, tl| tl.decode.pushed() + tl.prefill.pushed() > 0);
        ev.retractions.retain(|r| keep(r.t));
        // Over a window the kept events are what is known (exact unless the log had more than
        // MAX_RETRACTION_SAMPLES of them), each source's and so their sum
        for (s, r) in ev.retractions_by_source.iter_mut().enumerate() {
            let mine: Vec<RetractionEvent> = ev
                .retractions
                .iter()
                .filter(|e| e.loc.source == s)
                .cloned()
                .collect();
            r.totals = RetractionTotals::of(&mine);
            r.lines = mine.iter().map(|e| u64::from(e.ranks_reporting)).sum();
        }
        ev.retraction_totals = ev.sum_retractions(|_| false).0;
        ev
    }

    /// Join the schedulers that several files describe once, and put each in time order:
    /// - a file that repeats another (the same log given twice, or plain and `.gz`) is counted
    ///   once: its schedulers, retractions and benchmark blocks are set aside;
    /// - files that follow one another in time (rotated parts) become one scheduler;
    /// - a DP rank's lines from several files (one file per node or TP rank) are one scheduler,
    ///   the lowest TP rank's lines kept and the others counted as duplicates;
    /// - files without DP tags that overlap in time with different lines stay separate servers;
    /// - lines out of time order by less than [`crate::thresholds::JITTER_WINDOW_S`] (swapped
    ///   lines, a reversed file) are put in order; a step back by more is a restart, and only the
    ///   last run of that scheduler is kept (said in a [`JoinNote::EarlierRunsSetAside`]); within
    ///   one file the builder has already split the log into server runs ([`runs`]), so this
    ///   is left for a step back across files.
    ///
    /// Borrowed (no copy) when there is nothing to join or reorder.
    pub fn consolidated(&self) -> (std::borrow::Cow<'_, Evidence>, Vec<JoinNote>) {
        if !self.needs_consolidation() {
            return (std::borrow::Cow::Borrowed(self), Vec::new());
        }
        let (ev, notes) = self.clone().consolidate();
        (std::borrow::Cow::Owned(ev), notes)
    }

    /// [`Evidence::consolidated`], taking the evidence: it is joined and put in order itself,
    /// not a copy of it (a copy of every scheduler's samples).
    pub fn into_consolidated(self) -> (Evidence, Vec<JoinNote>) {
        if !self.needs_consolidation() {
            return (self, Vec::new());
        }
        self.consolidate()
    }

    /// Whether [`Evidence::consolidated`] has anything to do: schedulers to join, a DP rank
    /// keyed by its file, or lines out of time order.
    fn needs_consolidation(&self) -> bool {
        let mut per_group: BTreeMap<(Option<u32>, Option<u32>), usize> = BTreeMap::new();
        for k in self.schedulers.keys() {
            *per_group.entry((k.dp, k.pp)).or_default() += 1;
        }
        let rekey = self
            .schedulers
            .keys()
            .any(|k| k.dp.is_some() && k.source.is_some());
        let unordered = self.schedulers.values().any(|t| !t.is_time_ordered());
        !(per_group.values().all(|&n| n < 2) && !rekey && !unordered)
    }

    /// The joining and ordering of [`Evidence::consolidated`], on the evidence itself.
    fn consolidate(self) -> (Evidence, Vec<JoinNote>) {
        let mut ev = self;
        let mut notes: Vec<JoinNote> = Vec::new();
        let mut note = |n: JoinNote| {
            if !notes.contains(&n) {
                notes.push(n);
            }
        };
        let name = |ev: &Evidence, s: Option<SourceId>| {
            s.and_then(|s| ev.sources.get(s))
                .map(|x| x.name.clone())
                .unwrap_or_default()
        };
        // Sources with at least one scheduler, and those whose every scheduler repeated another.
        let mut contributing: BTreeMap<SourceId, (usize, usize)> = BTreeMap::new();
        for k in ev.schedulers.keys() {
            if let Some(s) = k.source {
                contributing.entry(s).or_default().0 += 1;
            }
        }
        let mut groups: BTreeMap<(Option<u32>, Option<u32>), Vec<SchedulerKey>> = BTreeMap::new();
        for k in ev.schedulers.keys() {
            groups.entry((k.dp, k.pp)).or_default().push(*k);
        }
        let mut overlapped = false;
        for ((dp, pp), mut keys) in groups {
            // by start, then by end: rotated parts of one second's lines (a part cut every few
            // lines) start alike, and the one that ends first comes first, so that each part
            // follows the one before it (issue 30 A5: a warm-up part sorted after a longer one
            // of the same start second was kept as a second "rank 0")
            keys.sort_by(|a, b| {
                let range = |k: &SchedulerKey| ev.schedulers.get(k).and_then(|t| t.time_range());
                match (range(a), range(b)) {
                    (Some(x), Some(y)) => x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1)),
                    (x, y) => x.is_some().cmp(&y.is_some()),
                }
            });
            let mut kept: Vec<SchedulerKey> = Vec::new();
            for next in keys {
                let Some(b) = ev.schedulers.get(&next) else {
                    continue;
                };
                if let Some(of) = kept
                    .iter()
                    .find(|k| ev.schedulers.get(k).is_some_and(|a| a.same_lines(b)))
                    .copied()
                {
                    note(JoinNote::Repeats {
                        file: name(&ev, next.source),
                        of: name(&ev, of.source),
                    });
                    if let Some(s) = next.source {
                        contributing.entry(s).or_default().1 += 1;
                    }
                    ev.schedulers.remove(&next);
                    continue;
                }
                let Some(&cur) = kept.last() else {
                    kept.push(next);
                    continue;
                };
                let (Some(a), Some(b)) = (ev.schedulers.get(&cur), ev.schedulers.get(&next)) else {
                    continue;
                };
                let follows = matches!((a.time_range(), b.time_range()), (Some(x), Some(y)) if y.0 >= x.1 - 1.0);
                // An overlapping copy of the same lines (a part cut with overlap, another TP
                // rank's file of the same batches): one scheduler, each line once.
                let copy = !follows
                    && a.overlap_share(b)
                        .is_some_and(|s| s >= crate::thresholds::OVERLAP_SAME_SHARE);
                if copy {
                    if let Some(b) = ev.schedulers.remove(&next)
                        && let Some(a) = ev.schedulers.get_mut(&cur)
                    {
                        a.union_with(&b);
                    }
                    note(JoinNote::Overlaps {
                        file: name(&ev, next.source),
                        of: name(&ev, cur.source),
                    });
                    overlapped = true;
                    continue;
                }
                if dp.is_some() && a.tp != b.tp {
                    // Another TP rank of the same DP scheduler: keep the lowest TP rank's lines.
                    let (keep, drop) = if b.tp < a.tp {
                        (next, cur)
                    } else {
                        (cur, next)
                    };
                    if let Some(d) = ev.schedulers.remove(&drop)
                        && let Some(k) = ev.schedulers.get_mut(&keep)
                    {
                        k.duplicate_lines +=
                            d.decode.pushed() + d.prefill.pushed() + d.duplicate_lines;
                    }
                    kept.retain(|k| *k != drop);
                    if !kept.contains(&keep) {
                        kept.push(keep);
                    }
                } else if follows || dp.is_some() {
                    // the part it continues: the one whose lines the joined scheduler ends with
                    let prev = ev
                        .schedulers
                        .get(&cur)
                        .and_then(|a| a.last)
                        .map(|l| l.source)
                        .or(cur.source);
                    if let Some(b) = ev.schedulers.remove(&next)
                        && let Some(a) = ev.schedulers.get_mut(&cur)
                    {
                        // one scheduler again: a full timeline, whatever each part kept
                        let full = timeline::DEFAULT_CAPACITY;
                        a.decode.set_capacity(a.decode.capacity().max(full));
                        a.prefill.set_capacity(a.prefill.capacity().max(full));
                        a.decode.append(&b.decode);
                        a.frozen.append(&b.frozen);
                        a.crash_t = match (a.crash_t, b.crash_t) {
                            (Some(x), Some(y)) => Some(x.min(y)),
                            (x, y) => x.or(y),
                        };
                        a.prefill.append(&b.prefill);
                        a.agg.merge(&b.agg);
                        a.duplicate_lines += b.duplicate_lines;
                        a.last = b.last.or(a.last);
                    }
                    if follows {
                        note(JoinNote::Continues {
                            file: name(&ev, next.source),
                            of: name(&ev, prev),
                        });
                    }
                } else {
                    kept.push(next);
                }
            }
            // A DP rank is one scheduler whatever file its lines came from.
            if dp.is_some() {
                for k in kept {
                    if let Some(tl) = ev.schedulers.remove(&k) {
                        ev.schedulers.insert(
                            SchedulerKey {
                                source: None,
                                dp,
                                pp,
                            },
                            tl,
                        );
                    }
                }
            }
        }
        // A file that only repeated others adds nothing else either.
        let repeated: Vec<SourceId> = contributing
            .iter()
            .filter(|(_, (n, dup))| *n > 0 && n == dup)
            .map(|(s, _)| *s)
            .collect();
        if overlapped {
            // The same retraction seen in two overlapping files: the same second and figures.
            type Seen = (
                Option<i64>,
                Option<u64>,
                Option<u64>,
                Option<u64>,
                Option<u64>,
            );
            let mut seen: std::collections::HashSet<Seen> = std::collections::HashSet::new();
            ev.retractions.retain(|r| {
                r.t.is_none()
                    || seen.insert((
                        r.t.map(|t| t.round() as i64),
                        r.retracted_reqs,
                        r.new_tokens_gained,
                        r.ratio_before.map(f64::to_bits),
                        r.ratio_after.map(f64::to_bits),
                    ))
            });
            ev.retraction_totals = RetractionTotals::of(&ev.retractions);
        }
        if !repeated.is_empty() {
            ev.retractions.retain(|r| !repeated.contains(&r.loc.source));
            // from each kept source's exact totals: the kept sample may be thinned (a sum over
            // it lost every event it had let go: 5,479 events read as 2,000)
            (ev.retraction_totals, ev.retraction_lines) =
                ev.sum_retractions(|s| repeated.contains(&s));
            ev.benchmarks.retain(|b| !repeated.contains(&b.source));
            ev.incidents
                .stacks
                .retain(|s| !repeated.contains(&s.source));
        }
        for (key, tl) in ev.schedulers.iter_mut() {
            if let Some(n) = tl.put_in_time_order(key) {
                note(n);
            }
        }
        (ev, notes)
    }

    /// A copy with one more scheduler built from `/metrics` polls (used when the logs hold no
    /// batch lines, so that a live server alone still gets a verdict). The samples are decode
    /// samples on the polls' clock; line numbers are the poll numbers.
    pub fn with_metrics_scheduler(&self, m: &crate::context::MetricsFacts) -> Evidence {
        let mut ev = self.clone();
        ev.sources.push(SourceInfo {
            name: m.source.clone(),
            kind: InputKind::MetricsPolls,
            stats: None,
            pd_role: None,
            opens_with_startup: false,
        });
        let source = ev.sources.len() - 1;
        let key = SchedulerKey {
            source: Some(source),
            dp: None,
            pp: None,
        };
        let tl = ev.schedulers.entry(key).or_default();
        for (i, x) in m.samples.iter().enumerate() {
            let line = i as u64 + 1;
            let to_u = |v: Option<f64>| {
                v.filter(|x| x.is_finite() && *x >= 0.0)
                    .map(|x| x.round() as u64)
            };
            let d = DecodeSample {
                t: Some(x.t),
                line,
                source: u32::try_from(source).unwrap_or(u32::MAX),
                running: to_u(x.running),
                queue: to_u(x.queued),
                usage: x.token_usage,
                gen_tps: x.gen_throughput,
                ..DecodeSample::default()
            };
            if tl.first.is_none() {
                tl.first = Some(Loc { source, line });
            }
            tl.last = Some(Loc { source, line });
            tl.push_decode(d);
        }
        ev
    }
}

impl SchedulerTimeline {
    /// Put the samples in time order: steps back shorter than the jitter window are reordered;
    /// after a longer step back (a restart) only the last run is kept. Returns what was done.
    pub(super) fn put_in_time_order(&mut self, key: &SchedulerKey) -> Option<JoinNote> {
        if self.is_time_ordered() {
            return None;
        }
        let window = crate::thresholds::JITTER_WINDOW_S;
        // Steps back in push order over both lists, merged by line (one source: line order is
        // write order).
        let mut marks: Vec<(u64, f64)> = self
            .decode
            .samples()
            .iter()
            .filter_map(|d| Some((d.line, d.t?)))
            .chain(
                self.prefill
                    .samples()
                    .iter()
                    .filter_map(|p| Some((p.line, p.t?))),
            )
            .collect();
        marks.sort_by_key(|m| m.0);
        let mut steps_back = 0;
        let mut restarts: Vec<(u64, f64)> = Vec::new();
        for w in marks.windows(2) {
            if w[1].1 < w[0].1 {
                steps_back += 1;
                if w[0].1 - w[1].1 > window {
                    restarts.push((w[1].0, w[0].1 - w[1].1));
                }
            }
        }
        // Most steps back: the lines are in reverse order (a reversed paste), not restarts.
        let reversed = steps_back * 2 > marks.len().saturating_sub(1);
        if reversed {
            restarts.clear();
        }
        let single_source = self
            .first
            .zip(self.last)
            .is_some_and(|(a, b)| a.source == b.source);
        let mut decode: Vec<DecodeSample> = self.decode.samples().to_vec();
        let mut prefill: Vec<PrefillSample> = self.prefill.samples().to_vec();
        let note = match restarts.last() {
            Some(&(from_line, step_back_s)) if single_source => {
                decode.retain(|d| d.line >= from_line);
                prefill.retain(|p| p.line >= from_line);
                if let Some(first) = self.first.as_mut() {
                    first.line = from_line;
                }
                JoinNote::EarlierRunsSetAside {
                    scheduler: *key,
                    runs: restarts.len() + 1,
                    step_back_s,
                    from_line,
                }
            }
            _ => JoinNote::Reordered {
                scheduler: *key,
                steps_back,
            },
        };
        let by_time = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => std::cmp::Ordering::Equal,
        };
        decode.sort_by(|a, b| by_time(a.t, b.t));
        prefill.sort_by(|a, b| by_time(a.t, b.t));
        let (tp, first, last, dup) = (self.tp, self.first, self.last, self.duplicate_lines);
        let crash_t = self.crash_t;
        *self = SchedulerTimeline {
            tp,
            first,
            last,
            duplicate_lines: dup,
            crash_t,
            ..SchedulerTimeline::default()
        };
        for d in decode {
            self.push_decode(d);
        }
        for p in prefill {
            self.push_prefill(p);
        }
        Some(note)
    }
}
