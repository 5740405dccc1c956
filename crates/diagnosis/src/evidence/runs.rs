//! Server runs in one log: where one run of the server ends and the next begins.
//!
//! A log file can hold several runs of the server: a restart appended to the same file, two
//! logs pasted one after the other (`cat a.log b.log`), a server left silent for hours and
//! then loaded again. Read as one run, their batch lines make one timeline: a steady span held
//! across a 22-hour gap, the first run's pool size applied to the second. `RunSplitter`
//! watches the lines the [`super::EvidenceBuilder`] takes, per source, and says where a new run
//! begins; the builder then closes the evidence gathered so far as an earlier run
//! ([`super::Evidence::earlier_runs`]) and starts a fresh one, so every run has its own
//! schedulers, retractions, incidents and startup facts (`server_args`, pool size), exactly as
//! if its lines had been read alone.
//!
//! A new run begins, in one source, at:
//! - a startup line (`server_args=ServerArgs(...)`, `Load weight end`, `KV Cache is allocated`,
//!   `Memory pool end`, the capacity line, `Capture cuda graph end`, the HiCache allocation,
//!   the sliding-window pool line)
//!   after batch lines of the current run: SGLang prints these once per process, before it
//!   serves (spec §1.1; the ready banner is not one: it follows the warm-up request's batch
//!   lines). This is the decisive evidence, when the line is stamped at least
//!   [`RESTART_MIN_GAP_S`] after the run's last batch line, or more than
//!   [`crate::thresholds::JITTER_WINDOW_S`] before its first (or not stamped): a new process
//!   imports torch and SGLang before it prints anything, while a startup line stamped within
//!   the run's span is one of this run's printed late by its rank or put out of order (a
//!   second `server_args` line in a run is decisive wherever it is stamped: the launcher
//!   prints it once per launch);
//! - a batch line whose clock steps back by more than [`crate::thresholds::JITTER_WINDOW_S`]
//!   from the previous batch line and from the run's first one (the startup lines of that run
//!   were cut away; a line stamped within the run's own span is one of its lines out of
//!   order, as lines shuffled by a collector are);
//! - a batch line later than the previous one by [`crate::thresholds::RUN_GAP_S`] and by
//!   [`crate::thresholds::RUN_GAP_INTERVALS`] log intervals.
//!
//! A source whose lines run mostly backwards in time (a reversed paste) has no runs: its steps
//! back are its order, and its startup lines come last.

use serde::Serialize;

use super::{Evidence, Loc, SchedulerTimeline};
use crate::report::RunStart;
use crate::thresholds::{JITTER_WINDOW_S, RESTART_MIN_GAP_S, RUN_GAP_INTERVALS, RUN_GAP_S};

/// Earlier runs whose evidence is kept (runs); older ones are counted in
/// [`Evidence::earlier_runs_dropped`] (memory stays bounded on a log of many restarts).
pub const MAX_EARLIER_RUNS: usize = 32;

/// Gaps between batch lines kept per source and run to estimate the log interval (gaps).
const INTERVAL_SAMPLES: usize = 1024;

/// Where one run lies in the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RunBounds {
    /// What separates it from the run before (`None` for the first run).
    pub start: Option<RunStart>,
    /// Its first line (line 1 of its first source for the first run).
    pub first: Option<Loc>,
    /// Its last line: the line before the next run when that is in the same source, else the
    /// last batch or startup line seen (the file's last line once the file is finished).
    pub last: Option<Loc>,
    /// First timestamp of its batch and startup lines (seconds).
    pub first_t: Option<f64>,
    /// Last timestamp of its batch and startup lines (seconds).
    pub last_t: Option<f64>,
    /// Its first timestamp minus the previous run's last (seconds; negative: a step back).
    pub gap_before_s: Option<f64>,
    /// The previous run's last timestamp (seconds), until this run's first timestamp is seen.
    prev_last_t: Option<f64>,
}

impl RunBounds {
    /// Note a batch or startup line of this run at `loc`, at time `t` (seconds).
    // inline: called once per batch line
    #[inline]
    pub(crate) fn note(&mut self, loc: Loc, t: Option<f64>) {
        if self.first.is_none() {
            self.first = Some(Loc { line: 1, ..loc });
        }
        self.last = Some(loc);
        if let Some(t) = t.filter(|t| t.is_finite()) {
            if self.first_t.is_none() {
                self.first_t = Some(t);
                if let Some(prev) = self.prev_last_t.take() {
                    let gap = t - prev;
                    self.gap_before_s = Some(gap);
                    // a startup block whose first stamped line is earlier than the last run's
                    // end: the clock stepped back too
                    if self.start == Some(RunStart::NewStartup) && -gap > JITTER_WINDOW_S {
                        self.start = Some(RunStart::StepBack { seconds: -gap });
                    }
                }
            }
            self.last_t = Some(t);
        }
    }

    /// The bounds of the run that begins at `at` after `self` ends, for the reason `start`.
    pub(crate) fn next(&mut self, at: Loc, start: RunStart) -> RunBounds {
        if self.last.is_none_or(|l| l.source == at.source) && at.line > 1 {
            self.last = Some(Loc {
                line: at.line - 1,
                ..at
            });
        }
        RunBounds {
            start: Some(start),
            first: Some(at),
            prev_last_t: self.last_t,
            ..RunBounds::default()
        }
    }

    /// End the run at the last line of its last source, `lines` long.
    pub(crate) fn end_at(&mut self, lines: impl Fn(usize) -> Option<u64>) {
        if let Some(last) = self.last.as_mut()
            && let Some(n) = lines(last.source)
            && n >= last.line
        {
            last.line = n;
        }
    }
}

/// One source's lines in the current run.
#[derive(Clone, Debug, Default)]
struct SourceRun {
    /// Batch lines seen (all TP ranks).
    batch_lines: u64,
    /// Consecutive stamped batch lines that step forward, and that step back (lines of one
    /// second, printed by several DP ranks, do neither).
    forward: u64,
    back: u64,
    /// The earliest stamp of its batch and startup lines (seconds): where the run's span
    /// begins, whatever order its lines came in.
    earliest_t: Option<f64>,
    /// Time of the last stamped batch line (seconds).
    last_t: Option<f64>,
    /// The first gaps between stamped batch lines (seconds), for the log interval.
    gaps: Vec<f64>,
}

impl SourceRun {
    /// Whether the lines so far run forwards in time (no more steps back than forward).
    fn in_order(&self) -> bool {
        self.back <= self.forward
    }

    /// The median gap between batch lines so far (seconds; 0 without gaps).
    fn interval(&self) -> f64 {
        let mut g = self.gaps.clone();
        g.sort_by(f64::total_cmp);
        g.get(g.len() / 2).copied().unwrap_or(0.0)
    }
}

/// The run bookkeeping of consecutive batch lines of one source merged from a chunk
/// (`merge.rs`), each stamped with a date less than [`RUN_GAP_S`] after the one before and not
/// before it, once the source's interval sample is full: such a line begins no run and
/// changes only counts and the last line and time, so these are held here and written back
/// into the [`RunSplitter`] and the run's [`RunBounds`] before any other line is taken
/// ([`super::EvidenceBuilder::close_stretch`]); one line's notes there cost ~75 instructions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stretch {
    /// Whether it holds a source's state (else every line goes the general way).
    pub(crate) open: bool,
    /// The source.
    pub(crate) source: usize,
    /// The last line's time (seconds) and place.
    pub(crate) last_t: f64,
    pub(crate) last: Loc,
    /// Lines taken, and those of them a step forward in time.
    pub(crate) lines: u64,
    pub(crate) forward: u64,
}

impl Default for Stretch {
    fn default() -> Self {
        Stretch {
            open: false,
            source: 0,
            last_t: 0.0,
            last: Loc { source: 0, line: 0 },
            lines: 0,
            forward: 0,
        }
    }
}

impl Stretch {
    /// Takes the next batch line, at `at` and time `t` (seconds, finite), when it is such a
    /// step; `false` leaves it to [`RunSplitter::batch`].
    #[inline(always)]
    pub(crate) fn step(&mut self, at: Loc, t: f64) -> bool {
        let d = t - self.last_t;
        if !(self.open && (0.0..RUN_GAP_S).contains(&d)) {
            return false;
        }
        self.forward += u64::from(d > 0.0);
        self.lines += 1;
        self.last_t = t;
        self.last = at;
        true
    }
}

/// Says where a new server run begins (see the module doc).
#[derive(Clone, Debug, Default)]
pub(crate) struct RunSplitter {
    sources: Vec<SourceRun>,
}

impl RunSplitter {
    fn state(&mut self, source: usize) -> &mut SourceRun {
        if self.sources.len() <= source {
            self.sources.resize_with(source + 1, SourceRun::default);
        }
        &mut self.sources[source]
    }

    /// A batch line of `source` at time `t` (seconds): whether a new run begins at it.
    ///
    /// The usual line, stamped less than [`RUN_GAP_S`] after the source's last stamped batch
    /// line and not before it, begins none whatever the order so far: it is counted here
    /// without the checks (a step back past the jitter window or a long gap) that it cannot
    /// meet ([`Self::batch_general`] took ~90 instructions a line).
    // inline: called once per batch line (~20 instructions of call and saved registers)
    #[inline]
    pub(crate) fn batch(&mut self, source: usize, t: Option<f64>) -> Option<RunStart> {
        if let (Some(t), Some(s)) = (t, self.sources.get_mut(source))
            && let Some(last) = s.last_t
        {
            let d = t - last;
            if (0.0..RUN_GAP_S).contains(&d) {
                s.forward += u64::from(d > 0.0);
                if s.gaps.len() < INTERVAL_SAMPLES {
                    s.gaps.push(d);
                }
                s.batch_lines += 1;
                // `earliest_t` stays: it is at most `last`, which is at most `t`
                s.last_t = Some(t);
                return None;
            }
        }
        self.batch_general(source, t)
    }

    /// [`Self::batch`] of any line.
    #[inline(never)]
    fn batch_general(&mut self, source: usize, t: Option<f64>) -> Option<RunStart> {
        let s = self.state(source);
        let mut start = None;
        if let (Some(t), Some(last)) = (t, s.last_t) {
            let d = t - last;
            if s.in_order() {
                // back past the run's own first line: a clock that went back (a log pasted
                // after a later one); within the run's span it is a line out of order
                if -d > JITTER_WINDOW_S && s.earliest_t.is_none_or(|f| t < f - JITTER_WINDOW_S) {
                    start = Some(RunStart::StepBack { seconds: -d });
                } else if d >= RUN_GAP_S && d >= RUN_GAP_INTERVALS * s.interval() {
                    start = Some(RunStart::Gap { seconds: d });
                }
            }
            if start.is_none() {
                if d < 0.0 {
                    s.back += 1;
                } else {
                    s.forward += u64::from(d > 0.0);
                    if s.gaps.len() < INTERVAL_SAMPLES {
                        s.gaps.push(d);
                    }
                }
            }
        }
        let s = if start.is_some() {
            self.sources.clear();
            self.state(source)
        } else {
            s
        };
        s.batch_lines += 1;
        if let Some(t) = t {
            s.earliest_t = Some(s.earliest_t.map_or(t, |e| e.min(t)));
            s.last_t = Some(t);
        }
        start
    }

    /// A stretch of `source`'s next batch lines ([`Stretch`]), open when its last batch line
    /// was stamped and its interval sample is full.
    pub(crate) fn open_stretch(&self, source: usize) -> Stretch {
        match self.sources.get(source) {
            Some(s) if s.gaps.len() >= INTERVAL_SAMPLES => Stretch {
                open: s.last_t.is_some(),
                source,
                last_t: s.last_t.unwrap_or(0.0),
                ..Stretch::default()
            },
            _ => Stretch::default(),
        }
    }

    /// Writes `stretch`'s lines back into the state of its source, as [`Self::batch`] of each
    /// would have left it, and empties it.
    pub(crate) fn close_stretch(&mut self, stretch: &mut Stretch) {
        if stretch.lines > 0
            && let Some(s) = self.sources.get_mut(stretch.source)
        {
            s.forward += stretch.forward;
            s.batch_lines += stretch.lines;
            s.last_t = Some(stretch.last_t);
        }
        *stretch = Stretch::default();
    }

    /// A startup line of `source` at time `t` (seconds): whether a new run begins at it.
    /// `relaunch`: the line is a second `server_args` (or launch command) of this run, which
    /// the launcher prints once per launch: a new run wherever it is stamped.
    pub(crate) fn startup(
        &mut self,
        source: usize,
        t: Option<f64>,
        relaunch: bool,
    ) -> Option<RunStart> {
        let s = self.state(source);
        if s.batch_lines == 0 || !s.in_order() {
            if let Some(t) = t {
                s.earliest_t = Some(s.earliest_t.map_or(t, |e| e.min(t)));
            }
            return None;
        }
        let start = match (t, s.earliest_t, s.last_t) {
            (Some(t), Some(first), Some(last)) if t < first - JITTER_WINDOW_S => {
                RunStart::StepBack { seconds: last - t }
            }
            // within this run's span, or within seconds after its last batch line: a line of
            // this run's own start-up out of order (a rank that printed it late, lines
            // interleaved by a collector), not a new process, which imports torch and SGLang
            // before its first line
            (Some(t), Some(_), Some(last)) if last - t > JITTER_WINDOW_S && relaunch => {
                RunStart::StepBack { seconds: last - t }
            }
            (Some(t), Some(e), Some(last)) if t - last < RESTART_MIN_GAP_S && !relaunch => {
                s.earliest_t = Some(e.min(t));
                return None;
            }
            _ => RunStart::NewStartup,
        };
        self.sources.clear();
        Some(start)
    }
}

/// Whether a record is a startup line: printed once per server process, before it serves.
pub(crate) fn is_startup(e: &sglang_log::Event<'_>) -> bool {
    use sglang_log::Event as E;
    matches!(
        e,
        E::ServerArgs(_)
            | E::LaunchCommand(_)
            | E::LoadWeightEnd(_)
            | E::KvCacheAllocated(_)
            | E::MemoryPoolEnd(_)
            | E::CudaGraphEnd(_)
            | E::Capacity(_)
            | E::HiCacheAllocated { .. }
            | E::SwaPool { .. }
    )
}

/// Whether two timelines hold the same batch lines, wherever in the file they were (the same
/// times and figures; line numbers aside).
fn same_samples(a: &SchedulerTimeline, b: &SchedulerTimeline) -> bool {
    a.decode.pushed() == b.decode.pushed()
        && a.prefill.pushed() == b.prefill.pushed()
        && a.decode.samples().len() == b.decode.samples().len()
        && a.prefill.samples().len() == b.prefill.samples().len()
        && a.decode
            .samples()
            .iter()
            .zip(b.decode.samples())
            .all(|(x, y)| {
                super::DecodeSample {
                    line: y.line,
                    source: y.source,
                    ..*x
                } == *y
            })
        && a.prefill
            .samples()
            .iter()
            .zip(b.prefill.samples())
            .all(|(x, y)| {
                super::PrefillSample {
                    line: y.line,
                    source: y.source,
                    ..*x
                } == *y
            })
}

impl Evidence {
    /// Whether `other` is a run of the same lines as this one (a log concatenated with itself):
    /// the same schedulers with the same batch lines, line numbers aside. Runs without batch
    /// lines are never the same.
    pub fn same_run_lines(&self, other: &Evidence) -> bool {
        !self.schedulers.is_empty()
            && self.schedulers.len() == other.schedulers.len()
            && self
                .schedulers
                .iter()
                .zip(&other.schedulers)
                .all(|((ka, a), (kb, b))| ka == kb && same_samples(a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::EvidenceBuilder;
    use sglang_log::parse_line;

    // Real lines: the end of scenarios/kimi-k25-b1 and the start of scenarios/kimi-k25-b2.
    const B1_END: &[&str] = &[
        "[2026-02-10 14:59:58 TP0] Prefill batch, #new-seq: 3, #new-token: 572, #cached-token: 15, token usage: 0.54, #running-req: 67, #queue-req: 83, #pending-token: 0",
        "[2026-02-10 14:59:59 TP0] Decode batch, #running-req: 67, #token: 64131, token usage: 0.55, cuda graph: True, gen throughput (token/s): 983.87, #queue-req: 83",
    ];
    const B2_START: &[&str] = &[
        "[2026-02-10 13:58:00] server_args=ServerArgs(model_path='moonshotai/Kimi-K2.5', tp_size=8, mem_fraction_static=0.85, chunked_prefill_size=8192, max_running_requests=None, num_continuous_decode_steps=4, kv_cache_dtype='auto', enable_hierarchical_cache=False, schedule_policy='fcfs', decode_log_interval=40)",
        "[2026-02-10 13:58:10 TP0] Load weight end. type=KimiK25ForConditionalGeneration, dtype=torch.bfloat16, avail mem=21.85 GB, mem usage=73.15 GB.",
        "[2026-02-10 13:58:20 TP0] KV Cache is allocated. #tokens: 116171, KV size: 7.60 GB",
    ];

    fn evidence(lines: &[String]) -> Evidence {
        let mut b = EvidenceBuilder::new();
        let id = b.add_source("log");
        for (i, l) in lines.iter().enumerate() {
            b.push(id, &parse_line(l.as_bytes(), i as u64 + 1));
        }
        b.build()
    }

    fn owned(parts: &[&[&str]]) -> Vec<String> {
        parts
            .iter()
            .flat_map(|p| p.iter().map(|s| s.to_string()))
            .collect()
    }

    #[test]
    fn a_startup_block_after_batch_lines_begins_a_run_and_brings_its_own_pool() {
        let ev = evidence(&owned(&[B1_END, B2_START]));
        assert_eq!(ev.earlier_runs.len(), 1);
        let first = &ev.earlier_runs[0];
        assert_eq!(first.run.first.map(|l| l.line), Some(1));
        assert_eq!(first.run.last.map(|l| l.line), Some(2));
        assert_eq!(first.startup.kv_alloc_tokens, None);
        assert_eq!(
            first
                .schedulers
                .values()
                .map(|s| s.decode.pushed())
                .sum::<u64>(),
            1
        );
        // the server_args line is stamped 13:58:00, the last batch line 14:59:59
        assert_eq!(ev.run.start, Some(RunStart::StepBack { seconds: 3719.0 }));
        assert_eq!(ev.run.first.map(|l| l.line), Some(3));
        assert_eq!(ev.run.gap_before_s, Some(-3719.0));
        assert_eq!(ev.startup.kv_alloc_tokens, Some(116_171));
        assert!(ev.schedulers.is_empty());
    }

    #[test]
    fn a_startup_block_later_in_time_is_a_new_startup() {
        let later: Vec<String> = B2_START
            .iter()
            .map(|l| l.replacen("2026-02-10", "2026-02-11", 1))
            .collect();
        let mut lines = owned(&[B1_END]);
        lines.extend(later);
        let ev = evidence(&lines);
        assert_eq!(ev.earlier_runs.len(), 1);
        assert_eq!(ev.run.start, Some(RunStart::NewStartup));
        // 14:59:59 to 13:58:00 the next day
        assert_eq!(ev.run.gap_before_s, Some(82_681.0));
    }

    #[test]
    fn a_step_back_between_batch_lines_begins_a_run() {
        let mut lines = owned(&[B1_END]);
        lines.push(B1_END[1].replacen("14:59:59", "13:59:59", 1));
        let ev = evidence(&lines);
        assert_eq!(ev.earlier_runs.len(), 1);
        assert_eq!(ev.run.start, Some(RunStart::StepBack { seconds: 3600.0 }));
        assert_eq!(ev.run.first.map(|l| l.line), Some(3));
        // a step back under the jitter window is not a run
        let mut lines = owned(&[B1_END]);
        lines.push(B1_END[1].replacen("14:59:59", "14:59:20", 1));
        assert!(evidence(&lines).earlier_runs.is_empty());
    }

    #[test]
    fn hours_of_silence_begin_a_run_and_an_idle_minute_does_not() {
        let at = |hms: &str| B1_END[1].replacen("14:59:59", hms, 1);
        let lines = vec![
            at("10:00:00"),
            at("10:00:01"),
            at("10:00:02"),
            at("15:00:02"),
        ];
        let ev = evidence(&lines);
        assert_eq!(ev.earlier_runs.len(), 1);
        assert_eq!(ev.run.start, Some(RunStart::Gap { seconds: 18_000.0 }));
        let lines = vec![
            at("10:00:00"),
            at("10:00:01"),
            at("10:00:02"),
            at("10:07:00"),
        ];
        assert!(evidence(&lines).earlier_runs.is_empty());
    }

    #[test]
    fn a_reversed_paste_has_no_runs() {
        let mut lines = owned(&[B2_START]);
        lines.extend((0..10).map(|s| B1_END[1].replacen("14:59:59", &format!("14:59:5{s}"), 1)));
        lines.reverse();
        let ev = evidence(&lines);
        assert!(ev.earlier_runs.is_empty());
    }

    #[test]
    fn a_log_of_many_restarts_keeps_the_latest_runs_and_counts_the_rest() {
        let runs = MAX_EARLIER_RUNS + 8;
        let mut lines = Vec::new();
        for _ in 0..runs {
            lines.extend(owned(&[B2_START, B1_END]));
        }
        let ev = evidence(&lines);
        assert_eq!(ev.earlier_runs.len(), MAX_EARLIER_RUNS);
        assert_eq!(ev.earlier_runs_dropped, 7);
        // each run is 5 lines; the last kept earlier run is the one before the last
        let per = (B2_START.len() + B1_END.len()) as u64;
        let last_kept = ev.earlier_runs.last().and_then(|e| e.run.first);
        assert_eq!(last_kept.map(|l| l.line), Some(per * (runs as u64 - 2) + 1));
        assert_eq!(
            ev.run.first.map(|l| l.line),
            Some(per * (runs as u64 - 1) + 1)
        );
        let report = crate::diagnose(&ev);
        let s = report.runs.expect("runs");
        assert_eq!(s.count, runs);
        assert_eq!(s.runs.first().map(|r| r.index), Some(8));
        assert_eq!(s.runs.last().map(|r| r.index), Some(runs));
    }

    #[test]
    fn a_run_repeated_is_the_same_lines() {
        let ev = evidence(&owned(&[B2_START, B1_END, B2_START, B1_END]));
        assert_eq!(ev.earlier_runs.len(), 1);
        assert!(ev.same_run_lines(&ev.earlier_runs[0]));
        let other = evidence(&owned(&[B2_START, B1_END[..1].as_ref()]));
        assert!(!ev.same_run_lines(&other));
    }

    /// The fast path of `RunSplitter::batch` gives what the general one gives, line by line:
    /// the same runs begun and the same state, through forward steps, repeated seconds, lines
    /// out of order, steps back past the jitter window, long gaps, unstamped lines and a
    /// source that runs backwards.
    #[test]
    fn the_usual_batch_line_is_counted_as_the_general_path_counts_it() {
        let mut times: Vec<Option<f64>> = Vec::new();
        let mut t = 1_000.0;
        for i in 0..3_000u32 {
            t += match i % 97 {
                0 => RUN_GAP_S + 1.0,
                13 => -(JITTER_WINDOW_S + 5.0),
                29 => -3.0,
                41 => 0.0,
                57 => RUN_GAP_S - 0.5,
                _ => 0.25 + f64::from(i % 5),
            };
            times.push((i % 31 != 7).then_some(t));
        }
        // then a source pasted backwards
        times.extend((0..200).map(|i| Some(50_000.0 - f64::from(i) * 90.0)));
        let (mut fast, mut general) = (RunSplitter::default(), RunSplitter::default());
        let mut starts = 0;
        for (i, t) in times.iter().enumerate() {
            let source = i % 2;
            let a = fast.batch(source, *t);
            let b = general.batch_general(source, *t);
            assert_eq!(a, b, "line {i}");
            starts += usize::from(a.is_some());
            assert_eq!(format!("{fast:?}"), format!("{general:?}"), "line {i}");
        }
        assert!(starts > 10, "{starts}");
    }

    /// Lines taken by a `Stretch` and written back leave the splitter as `RunSplitter::batch`
    /// of each leaves it, and a line that is not a short forward step is left to it.
    #[test]
    fn a_stretch_written_back_is_the_lines_taken_one_by_one() {
        let at = |line| Loc { source: 0, line };
        let (mut general, mut held) = (RunSplitter::default(), RunSplitter::default());
        let mut t = 0.0;
        for _ in 0..INTERVAL_SAMPLES + 5 {
            t += 1.0;
            general.batch(0, Some(t));
            held.batch(0, Some(t));
        }
        let mut stretch = held.open_stretch(0);
        assert!(stretch.open);
        for step in [0.0, 2.5, 0.0, RUN_GAP_S - 1.0, 3.0] {
            t += step;
            assert!(stretch.step(at(1), t));
            assert_eq!(general.batch(0, Some(t)), None);
        }
        // a step back, and a gap of hours: the general path's
        assert!(!stretch.step(at(2), t - 1.0));
        assert!(!stretch.step(at(2), t + RUN_GAP_S));
        held.close_stretch(&mut stretch);
        assert_eq!(format!("{held:?}"), format!("{general:?}"));
        assert!(!stretch.open);
        // a source whose interval sample is not full opens none
        assert!(!RunSplitter::default().open_stretch(0).open);
    }
}
