//! The [`EvidenceBuilder`]: records in, one source at a time or interleaved, owned and
//! bounded [`Evidence`] out.

use std::collections::{BTreeMap, VecDeque};

use sglang_log::{BenchCollector, Event, ParseStats, RankTags, Record, Timestamp};

use super::MAX_RETRACTION_SAMPLES;
use super::events::RECENT_RETRACTIONS;
use super::startup::SERVER_ARG_KEYS;
use super::{
    BatchSample, Evidence, Loc, PdRole, RetractionEvent, SchedulerKey, SchedulerTimeline, SourceId,
    SourceInfo, SourceStats, SourcedBench, runs, timeline,
};
use crate::report::InputKind;
use crate::thresholds as th;

/// Per-source state while reading.
#[derive(Default)]
struct SourceState {
    day_offset: f64,
    last_raw: Option<f64>,
    /// Benchmark blocks among the untimestamped lines not yet moved into the evidence.
    bench: BenchCollector,
    /// A startup line of this source named its `disaggregation_mode` (`null` included): its
    /// PD role is then what the last such line said, never inferred from its batch lines.
    pd_mode_said: bool,
    /// A batch line of this source has been read.
    batch_seen: bool,
}

/// Move a source's finished benchmark blocks into the evidence.
fn flush_bench(ev: &mut Evidence, source: SourceId, st: &mut SourceState) {
    let blocks = std::mem::take(&mut st.bench).finish();
    ev.benchmarks.extend(
        blocks
            .into_iter()
            .map(|summary| SourcedBench { source, summary }),
    );
}

/// Builds [`Evidence`] from records, one source at a time or interleaved.
pub struct EvidenceBuilder {
    ev: Evidence,
    states: Vec<SourceState>,
    /// Last retraction key per source for deduplication: (time, text) -> index in `retractions`
    /// (the oldest dropped first: a queue, not a list whose every entry moved on each drop).
    recent_retractions: VecDeque<(SourceId, Option<i64>, String, usize)>,
    pub(super) incidents: crate::incidents::IncidentBuilder,
    /// Where a new server run begins.
    runs: runs::RunSplitter,
    /// Samples each scheduler's timelines keep while reading (lowered by the sample budget).
    timeline_capacity: usize,
    /// The schedulers of the current run that batch lines were read for, taken out of
    /// `ev.schedulers` while the lines are read (a key is in one of the two, never in both;
    /// [`Self::settle`] puts them back): a batch line's scheduler is the last line's or the
    /// next one here (DP ranks print in turn), found without a map lookup (~130 instructions
    /// a line).
    live: Vec<(SchedulerKey, SchedulerTimeline)>,
    /// The index in `live` of the last batch line's scheduler.
    last_live: usize,
    /// Counts the times `live` was emptied ([`Self::settle`]): an index into it remembered
    /// for a chunk's rank tags ([`Self::push_chunk`]) holds while this is unchanged.
    pub(super) live_epoch: u64,
    /// The scheduler of each rank tags of the chunk being merged (kept for its memory).
    pub(super) chunk_live: Vec<(u64, usize)>,
    /// Parses a chunk's kept non-batch lines again ([`Self::push_chunk`]) with one reader's
    /// caches kept from line to line (a fresh cache per line, [`sglang_log::parse_line`], cost
    /// ~1,100 instructions a line).
    pub(super) reparse: sglang_log::LineParser,
}

/// Samples (decode and prefill together) that the schedulers of a read of several sources
/// keep at most, once each source has ended (eight full timelines; a decode sample is ~240
/// bytes, a prefill one less): see [`EvidenceBuilder::finish_source`].
pub const SAMPLE_BUDGET: usize = 8 * timeline::DEFAULT_CAPACITY;

/// The fewest samples a scheduler's timeline is cut to keep [`SAMPLE_BUDGET`] (its own
/// summaries still rest on hundreds of lines spread over its whole run).
pub const MIN_TIMELINE_CAPACITY: usize = 256;

impl Default for EvidenceBuilder {
    fn default() -> Self {
        EvidenceBuilder {
            ev: Evidence::default(),
            states: Vec::new(),
            recent_retractions: VecDeque::new(),
            incidents: Default::default(),
            runs: Default::default(),
            timeline_capacity: timeline::DEFAULT_CAPACITY,
            live: Vec::new(),
            last_live: 0,
            live_epoch: 0,
            chunk_live: Vec::new(),
            reparse: sglang_log::LineParser::new(),
        }
    }
}

impl EvidenceBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a source (a log file); returns its id for [`Self::push`].
    pub fn add_source(&mut self, name: impl Into<String>) -> SourceId {
        self.ev.sources.push(SourceInfo {
            name: name.into(),
            kind: InputKind::Log,
            stats: None,
            pd_role: None,
            opens_with_startup: false,
        });
        self.states.push(SourceState::default());
        self.ev.sources.len() - 1
    }

    /// Record the parse counts of a finished source.
    ///
    /// When more than one source has been added, the schedulers' timelines are then held to
    /// [`SAMPLE_BUDGET`] samples in all: while they hold more, every timeline's capacity is
    /// halved (down to [`MIN_TIMELINE_CAPACITY`]) and later schedulers start at the lower
    /// one. A job directory of many rank logs so reads in bounded memory (each scheduler's
    /// timeline alone is bounded, but one per rank file is not), and a read of one file keeps
    /// full timelines. The kept samples of a timeline are the offered ones at multiples of
    /// its stride whenever its capacity was set, so two copies of one log still keep the same
    /// samples; rotated parts of one scheduler get a full capacity back when
    /// [`Evidence::consolidated`] joins them.
    pub fn finish_source(&mut self, source: SourceId, stats: &ParseStats) {
        self.settle();
        if let Some(s) = self.ev.sources.get_mut(source) {
            s.stats = Some(SourceStats::from(stats));
        }
        if let Some(st) = self.states.get_mut(source) {
            flush_bench(&mut self.ev, source, st);
        }
        if self.ev.sources.len() > 1 {
            self.fit_sample_budget();
        }
    }

    /// Halves every timeline's capacity while the schedulers keep more than [`SAMPLE_BUDGET`]
    /// samples (see [`Self::finish_source`]).
    fn fit_sample_budget(&mut self) {
        let kept = |ev: &Evidence| -> usize {
            ev.schedulers
                .values()
                .map(|t| t.decode.samples().len() + t.prefill.samples().len())
                .sum()
        };
        let mut capacity = self.timeline_capacity;
        while kept(&self.ev) > SAMPLE_BUDGET && capacity > MIN_TIMELINE_CAPACITY {
            capacity = (capacity / 2).max(MIN_TIMELINE_CAPACITY);
            for t in self.ev.schedulers.values_mut() {
                t.decode.set_capacity(t.decode.capacity().min(capacity));
                t.prefill.set_capacity(t.prefill.capacity().min(capacity));
            }
            self.timeline_capacity = capacity;
        }
    }

    /// Notes the PD role a startup line of `source` names (`disaggregation_mode`, `null`
    /// included): the last one stands, as the last run is the one diagnosed.
    fn note_pd_role(&mut self, source: SourceId, mode: Option<&str>) {
        let Some(mode) = mode else {
            return;
        };
        if let Some(st) = self.states.get_mut(source) {
            st.pd_mode_said = true;
        }
        if let Some(s) = self.ev.sources.get_mut(source) {
            s.pd_role = PdRole::from_arg(mode);
        }
    }

    /// Sets the PD role of each source whose startup lines name no `disaggregation_mode` from
    /// its batch lines in every run (a later file's restart moves the earlier lines into
    /// [`Evidence::earlier_runs`]; they still show the role): PD decode when its decode lines
    /// carry a decode instance's fields and no prefill line a prefill instance's, PD prefill
    /// the other way round. SGLang prints `#prealloc-req` / `#transfer-req` / `pre-allocated
    /// usage` on a decode instance's decode lines and its bootstrap and in-flight queues on a
    /// prefill instance's prefill lines (spec §2.1-2.2). A source that shows both, or neither,
    /// keeps `None`.
    fn infer_pd_roles(ev: &mut Evidence, states: &[SourceState]) {
        // (PD prefill lines, prefill lines, PD decode lines, decode lines) per source
        let mut shown: BTreeMap<SourceId, [u64; 4]> = BTreeMap::new();
        for (k, tl) in ev.every_run_schedulers() {
            if let Some(s) = k.source {
                let e = shown.entry(s).or_default();
                e[0] += tl.agg.pd_prefill_lines;
                e[1] += tl.prefill.pushed();
                e[2] += tl.agg.pd_decode_lines;
                e[3] += tl.decode.pushed();
            }
        }
        // A PD server prints its queues on every batch line of its kind (`log_prefill_stats`,
        // `log_decode_stats` with a disaggregation mode): one line among hundreds that shows
        // one is damage or another server's line, not a role (issue 30 A3).
        let holds = th::pd_role_holds;
        for (id, [p_pd, p_all, d_pd, d_all]) in shown {
            if states.get(id).is_some_and(|st| st.pd_mode_said) {
                continue;
            }
            if let Some(src) = ev.sources.get_mut(id) {
                src.pd_role = match (holds(p_pd, p_all), holds(d_pd, d_all)) {
                    (true, false) => Some(PdRole::Prefill),
                    (false, true) => Some(PdRole::Decode),
                    _ => None,
                };
            }
        }
    }

    /// Seconds for a record, unwrapped across midnight when the log has no dates.
    pub(super) fn time_of(&mut self, source: SourceId, rec: &Record<'_>) -> Option<f64> {
        self.time_of_stamp(source, rec.timestamp.as_ref())
    }

    /// [`Self::time_of`] a record stamped `ts`.
    pub(super) fn time_of_stamp(
        &mut self,
        source: SourceId,
        ts: Option<&Timestamp>,
    ) -> Option<f64> {
        let ts = ts?;
        let raw = ts.seconds();
        if !raw.is_finite() {
            return None;
        }
        let st = self.states.get_mut(source)?;
        if !ts.has_date() {
            self.ev.dateless_timestamps = true;
            if let Some(last) = st.last_raw
                && raw + 43_200.0 < last
            {
                st.day_offset += 86_400.0;
            }
            st.last_raw = Some(raw);
            return Some(raw + st.day_offset);
        }
        Some(raw)
    }

    /// Seconds for a record as [`Self::time_of`] gives them, without moving the midnight
    /// unwrapping on (for lines only the run splitter reads the time of).
    fn peek_time(&self, source: SourceId, rec: &Record<'_>) -> Option<f64> {
        let ts = rec.timestamp.as_ref()?;
        let raw = ts.seconds();
        if !raw.is_finite() {
            return None;
        }
        if ts.has_date() {
            return Some(raw);
        }
        let st = self.states.get(source)?;
        let wrap = st.last_raw.is_some_and(|last| raw + 43_200.0 < last);
        Some(raw + st.day_offset + if wrap { 86_400.0 } else { 0.0 })
    }

    /// A batch line at `loc` (time `t`, seconds): a new run may begin at it (then `true`).
    // inline: called once per batch line (~25 instructions of call and saved registers)
    #[inline(always)]
    pub(super) fn observe_batch(&mut self, loc: Loc, t: Option<f64>) -> bool {
        self.note_batch_seen(loc.source);
        self.batch_run(loc, t)
    }

    /// A batch line of `source` has been read (what [`Self::observe_startup`] asks; the
    /// chunk merge says it once per stretch of batch lines, before the next other line).
    #[inline(always)]
    pub(super) fn note_batch_seen(&mut self, source: SourceId) {
        if let Some(st) = self.states.get_mut(source) {
            st.batch_seen = true;
        }
    }

    /// [`Self::observe_batch`] but for [`Self::note_batch_seen`].
    #[inline(always)]
    pub(super) fn batch_run(&mut self, loc: Loc, t: Option<f64>) -> bool {
        let new = if let Some(start) = self.runs.batch(loc.source, t) {
            self.new_run(loc, start);
            true
        } else {
            false
        };
        self.ev.run.note(loc, t);
        new
    }

    /// A stretch of batch lines of `source` from a chunk ([`runs::Stretch`]), open when its
    /// lines may be noted there: the run's first line and time are set.
    pub(super) fn open_stretch(&self, source: SourceId) -> runs::Stretch {
        if self.ev.run.first.is_none() || self.ev.run.first_t.is_none() {
            return runs::Stretch::default();
        }
        self.runs.open_stretch(source)
    }

    /// Writes the lines of `stretch` back, as [`Self::batch_run`] of each would have noted
    /// them, and empties it.
    pub(super) fn close_stretch(&mut self, stretch: &mut runs::Stretch) {
        if stretch.lines > 0 {
            self.ev.run.last = Some(stretch.last);
            self.ev.run.last_t = Some(stretch.last_t);
        }
        self.runs.close_stretch(stretch);
    }

    /// A startup line at `loc` (time `t`, seconds): a new run may begin at it.
    fn observe_startup(&mut self, loc: Loc, t: Option<f64>, relaunch: bool) {
        if self.states.get(loc.source).is_some_and(|st| !st.batch_seen)
            && let Some(s) = self.ev.sources.get_mut(loc.source)
        {
            s.opens_with_startup = true;
        }
        if let Some(start) = self.runs.startup(loc.source, t, relaunch) {
            self.new_run(loc, start);
        }
        self.ev.run.note(loc, t);
    }

    /// Close the evidence gathered so far as an earlier run and begin a new one at `at`.
    fn new_run(&mut self, at: Loc, start: crate::report::RunStart) {
        self.settle();
        for (source, st) in self.states.iter_mut().enumerate() {
            flush_bench(&mut self.ev, source, st);
        }
        let mut done = std::mem::take(&mut self.ev);
        done.incidents = std::mem::take(&mut self.incidents).build();
        self.recent_retractions.clear();
        self.ev.sources = done.sources.clone();
        self.ev.dateless_timestamps = done.dateless_timestamps;
        self.ev.run = done.run.next(at, start);
        self.ev.earlier_runs = std::mem::take(&mut done.earlier_runs);
        self.ev.earlier_runs_dropped = done.earlier_runs_dropped;
        if self.ev.earlier_runs.len() >= runs::MAX_EARLIER_RUNS {
            self.ev.earlier_runs.remove(0);
            self.ev.earlier_runs_dropped += 1;
        }
        self.ev.earlier_runs.push(done);
    }

    /// Give the earlier runs the sources' final counts, end the last run at its file's last
    /// line, and sum each run's retractions over its sources.
    fn close_runs(ev: &mut Evidence) {
        (ev.retraction_totals, ev.retraction_lines) = ev.sum_retractions(|_| false);
        super::outliers::set_aside(ev);
        let lines = |s: usize| {
            ev.sources
                .get(s)
                .and_then(|x| x.stats.as_ref())
                .map(|x| x.lines)
        };
        let mut run = ev.run;
        run.end_at(lines);
        ev.run = run;
        let (sources, dateless) = (ev.sources.clone(), ev.dateless_timestamps);
        for e in &mut ev.earlier_runs {
            e.sources = sources.clone();
            e.dateless_timestamps |= dateless;
            (e.retraction_totals, e.retraction_lines) = e.sum_retractions(|_| false);
            super::outliers::set_aside(e);
        }
    }

    /// The scheduler of a batch line of `source` with rank tags `ranks`.
    pub(super) fn key_for(source: SourceId, ranks: &RankTags) -> SchedulerKey {
        // Per source while reading (a DP rank's files are joined by `Evidence::consolidated`).
        SchedulerKey {
            source: Some(source),
            dp: ranks.dp,
            pp: ranks.pp,
        }
    }

    /// Take one parsed record from `source`.
    pub fn push(&mut self, source: SourceId, rec: &Record<'_>) {
        let loc = Loc {
            source,
            line: rec.line_no,
        };
        // A new server run may begin here: the line then belongs to it.
        let mut batch_t = None;
        if matches!(rec.event, Event::Batch(_)) {
            batch_t = self.time_of(source, rec);
            self.observe_batch(loc, batch_t);
        } else if runs::is_startup(&rec.event) {
            let t = self.peek_time(source, rec);
            // the launcher prints `server_args` once per launch: a second one in a run is a
            // second launch (or a log pasted after itself), whenever it is stamped
            let relaunch = matches!(rec.event, Event::ServerArgs(_) | Event::LaunchCommand(_))
                && self.ev.startup.server_args_line;
            self.observe_startup(loc, t, relaunch);
        }
        self.incidents.push(source, rec);
        match &rec.event {
            Event::Batch(b) => {
                if let Some(sched) = self.batch_target(source, rec.line_no, &rec.ranks) {
                    sched.offer(&BatchSample::of(rec.line_no, b), batch_t, loc);
                }
            }
            Event::Retraction(r) => {
                // counted per source; the totals are their sum (`close_runs`)
                if let Some(s) = self.ev.source_retractions(source) {
                    s.lines += 1;
                }
                let t = self.time_of(source, rec);
                let tkey = t.map(|x| x.round() as i64);
                // Same second, same text, same source: another TP rank reporting the same event
                // (at most one entry matches: one is added only when none does). The second is
                // compared first, which tells almost every entry apart, as a known `Some` (~7
                // instructions an entry, not ~10).
                let recent = &self.recent_retractions;
                let same = |s: SourceId, txt: &str| s == source && txt == r.text;
                let found = match tkey {
                    Some(k) => recent
                        .iter()
                        .find(|(s, tt, txt, _)| *tt == Some(k) && same(*s, txt)),
                    None => recent
                        .iter()
                        .find(|(s, tt, txt, _)| tt.is_none() && same(*s, txt)),
                };
                if let Some(entry) = found {
                    let idx = entry.3;
                    if let Some(ev) = self.ev.retractions.get_mut(idx) {
                        ev.ranks_reporting += 1;
                    }
                    if let Some(s) = self.ev.source_retractions(source) {
                        s.totals.note_line(loc);
                    }
                    return;
                }
                let event = RetractionEvent {
                    t,
                    loc,
                    retracted_reqs: r.retracted_reqs,
                    new_tokens_gained: r.new_tokens_gained,
                    ratio_before: r.new_token_ratio_before,
                    ratio_after: r.new_token_ratio_after,
                    ranks_reporting: 1,
                };
                if let Some(s) = self.ev.source_retractions(source) {
                    s.totals.add(&event);
                }
                if self.ev.retractions.len() >= MAX_RETRACTION_SAMPLES {
                    self.thin_retractions();
                }
                self.ev.retractions.push(event);
                let idx = self.ev.retractions.len() - 1;
                // the oldest entry leaves for the new one, which takes its text's buffer
                let mut text = String::new();
                if self.recent_retractions.len() >= RECENT_RETRACTIONS
                    && let Some((_, _, old, _)) = self.recent_retractions.pop_front()
                {
                    text = old;
                    text.clear();
                }
                text.push_str(r.text);
                self.recent_retractions.push_back((source, tkey, text, idx));
            }
            Event::Capacity(c) => {
                let st = &mut self.ev.startup;
                if st.max_total_num_tokens.is_none() {
                    if let Some(n) = c.max_total_num_tokens {
                        st.max_total_num_tokens = Some((n, loc));
                    }
                    st.max_running_requests = st.max_running_requests.or(c.max_running_requests);
                    st.chunked_prefill_size = st
                        .chunked_prefill_size
                        .or(c.chunked_prefill_size.and_then(|v| u64::try_from(v).ok()));
                    st.chunked_prefill_off |= c.chunked_prefill_size.is_some_and(|v| v <= 0);
                    st.max_prefill_tokens = st.max_prefill_tokens.or(c.max_prefill_tokens);
                    st.context_len = st.context_len.or(c.context_len);
                    st.available_gpu_mem_gb = st.available_gpu_mem_gb.or(c.available_gpu_mem_gb);
                }
            }
            Event::SwaPool {
                swa_tokens,
                full_tokens,
            } => {
                let st = &mut self.ev.startup;
                st.swa_pool_tokens = st.swa_pool_tokens.or(*swa_tokens);
                st.swa_full_pool_tokens = st.swa_full_pool_tokens.or(*full_tokens);
            }
            Event::MaxRunningReset(n) => {
                let st = &mut self.ev.startup;
                st.max_running_reset = st.max_running_reset.or(*n);
            }
            Event::MambaCacheAllocated(n) => {
                let st = &mut self.ev.startup;
                st.mamba_cache_slots = st.mamba_cache_slots.or(*n);
            }
            Event::KvCacheAllocated(k) => {
                let st = &mut self.ev.startup;
                if let Some(gb) = k.total_gb() {
                    let key = (rec.ranks, k.tokens, gb.to_bits());
                    let same_rank = st.kv_alloc_seen.first().is_none_or(|f| f.0 == rec.ranks);
                    if same_rank && !st.kv_alloc_seen.contains(&key) && st.kv_alloc_seen.len() < 8 {
                        st.kv_alloc_seen.push(key);
                        st.kv_alloc_total_gb = Some(st.kv_alloc_total_gb.unwrap_or(0.0) + gb);
                    }
                }
                if st.kv_alloc_tokens.is_none() {
                    st.kv_alloc_mla = k.kv_size_gb.is_some() && k.k_size_gb.is_none();
                    st.kv_alloc_tokens = k.tokens;
                    st.kv_alloc_gb = match (k.kv_size_gb, k.k_size_gb, k.v_size_gb) {
                        (Some(kv), _, _) => Some(kv),
                        (None, Some(a), Some(b)) => Some(a + b),
                        _ => None,
                    };
                }
            }
            Event::LoadWeightEnd(m) => {
                let st = &mut self.ev.startup;
                if st.avail_mem_after_weights_gb.is_none() {
                    st.avail_mem_after_weights_gb = m.avail_mem_gb;
                    st.weights_gb = m.mem_usage_gb;
                }
            }
            Event::MemoryPoolEnd(m) => {
                let st = &mut self.ev.startup;
                st.avail_mem_after_pool_gb = st.avail_mem_after_pool_gb.or(m.avail_mem_gb);
            }
            Event::CudaGraphEnd(m) => {
                let st = &mut self.ev.startup;
                st.avail_mem_after_graph_gb = st.avail_mem_after_graph_gb.or(m.avail_mem_gb);
            }
            Event::ServerArgs(a) => {
                self.note_pd_role(source, a.get("disaggregation_mode"));
                let st = &mut self.ev.startup;
                // the first line replaces what a launch command said; later ranks' copies not
                let first = !st.server_args_line;
                st.server_args_line = true;
                for key in SERVER_ARG_KEYS {
                    if let Some(v) = a.get(key) {
                        if first {
                            st.server_args.insert((*key).to_string(), v.to_string());
                        } else {
                            st.server_args
                                .entry((*key).to_string())
                                .or_insert_with(|| v.to_string());
                        }
                    }
                }
            }
            Event::LaunchCommand(a) => {
                self.note_pd_role(source, a.get("disaggregation_mode"));
                let st = &mut self.ev.startup;
                if !st.server_args_line {
                    for key in SERVER_ARG_KEYS {
                        if let Some(v) = a.get(key) {
                            let v = if v.is_empty() { "True" } else { v };
                            st.server_args
                                .entry((*key).to_string())
                                .or_insert_with(|| v.to_string());
                        }
                    }
                }
            }
            Event::HiCacheAllocated { host_gb, .. } => {
                let st = &mut self.ev.startup;
                st.hicache_host_gb = st.hicache_host_gb.or(*host_gb);
            }
            Event::ServerReady => self.ev.startup.server_ready = true,
            Event::Signal(s) => self.ev.shutdown.note(loc, *s),
            Event::StartupTimings(t) => {
                if let Some(d) = t.graph_decode_s {
                    self.ev.startup.graph_decode_capture_s = Some(d);
                }
            }
            Event::WatchdogTimeout(text) => {
                if !text.starts_with("Pyspy") {
                    self.note_crash(source, rec);
                }
                self.ev.watchdog.note(loc, text)
            }
            Event::SchedulerException(_) => self.note_crash(source, rec),
            Event::KvTransferFailed(text) => {
                match sglang_log::transfer_side(text) {
                    Some(sglang_log::TransferSide::Prefill) => self.ev.kv_transfer_sides.0 += 1,
                    Some(sglang_log::TransferSide::Decode) => self.ev.kv_transfer_sides.1 += 1,
                    None => {}
                }
                self.ev.kv_transfer_failures.note(loc, text)
            }
            Event::MoeConfigUntuned(text) => self.ev.moe_config_untuned.note(loc, text),
            Event::JitCompile(text) => self.ev.jit_compile.note(loc, text),
            Event::ReqTimeStats(text) => {
                if let Some(r) = sglang_log::parse_req_times(text) {
                    let t = self.time_of(source, rec);
                    self.ev.request_times.note(loc, t, &r);
                }
            }
            // A benchmark's summary has no server timestamp; server lines are never part of one.
            Event::Other if rec.timestamp.is_none() => {
                if let Some(st) = self.states.get_mut(source) {
                    st.bench.push(rec.line_no, rec.message);
                }
            }
            Event::KvCacheDtype(d) => {
                let st = &mut self.ev.startup;
                st.kv_cache_dtype
                    .get_or_insert_with(|| d.chars().take(40).collect());
            }
            Event::Nccl(_)
            | Event::OutOfMemory(_)
            | Event::SlowSchedulerPass(_)
            | Event::HealthCheckFailed(_)
            | Event::HttpAccess(_)
            | Event::HiCache(_) => {
                // `/health` answers 503 until the warm-up request is done and the server says
                // it is ready (`http_server.py` `_wait_and_warmup`): only later is it unhealthy
                let serving = self.ev.startup.server_ready;
                self.ev.alarms.note(loc, &rec.event, rec.message, serving)
            }
            // counted by the incident collector (`incidents.rs`: rejections, py-spy failures,
            // the startup's graph capture)
            Event::ContextRejected(_) | Event::PyspyFailed | Event::GraphCapture(_) => {}
            Event::Other | Event::Malformed { .. } | Event::TracebackStart => {}
        }
    }

    /// Drop every other kept retraction event except the most recent [`RECENT_RETRACTIONS`]
    /// (where other ranks' copies are still being matched), and move the indices of those.
    fn thin_retractions(&mut self) {
        let v = &mut self.ev.retractions;
        let old_len = v.len();
        let cut = old_len.saturating_sub(RECENT_RETRACTIONS);
        let mut i = 0;
        v.retain(|_| {
            let keep = i >= cut || i % 2 == 0;
            i += 1;
            keep
        });
        let removed = old_len - v.len();
        for entry in &mut self.recent_retractions {
            entry.3 = entry.3.saturating_sub(removed);
        }
    }

    /// Finish and return the evidence (benchmark blocks of sources not yet finished included;
    /// each source's PD role set from its batch lines where its startup lines name none).
    pub fn build(mut self) -> Evidence {
        self.settle();
        for (source, st) in self.states.iter_mut().enumerate() {
            flush_bench(&mut self.ev, source, st);
        }
        Self::infer_pd_roles(&mut self.ev, &self.states);
        self.ev.incidents = self.incidents.build();
        Self::close_runs(&mut self.ev);
        self.ev
    }

    /// The evidence so far, leaving the builder usable (live mode diagnoses repeatedly while
    /// the log grows); benchmark blocks still being read are left out.
    pub fn snapshot(&self) -> Evidence {
        let mut ev = self.ev.clone();
        for (k, t) in &self.live {
            ev.schedulers.insert(*k, t.clone());
        }
        ev.incidents = self.incidents.snapshot();
        for (source, st) in self.states.iter().enumerate() {
            ev.benchmarks
                .extend(st.bench.completed().iter().map(|b| SourcedBench {
                    source,
                    summary: b.clone(),
                }));
        }
        Self::infer_pd_roles(&mut ev, &self.states);
        Self::close_runs(&mut ev);
        ev
    }

    /// A line that ends a scheduler (`Scheduler hit an exception`, a watchdog timeout): its
    /// time marks the scheduler with those tags, when it has batch lines already (a crash
    /// before serving has no phase to end).
    fn note_crash(&mut self, source: SourceId, rec: &Record<'_>) {
        let Some(t) = self.peek_time(source, rec) else {
            return;
        };
        self.settle();
        if let Some(s) = self
            .ev
            .schedulers
            .get_mut(&Self::key_for(source, &rec.ranks))
        {
            s.crash_t = Some(s.crash_t.map_or(t, |c| c.min(t)));
        }
    }

    /// The index in `live` of scheduler `key`'s timeline: the last line's, the next one,
    /// another live one, or one taken out of `ev.schedulers` (a new one when there is none).
    pub(super) fn live_index(&mut self, key: SchedulerKey) -> usize {
        let n = self.live.len();
        let next = if self.last_live + 1 < n {
            self.last_live + 1
        } else {
            0
        };
        let at = if self.live.get(self.last_live).is_some_and(|l| l.0 == key) {
            self.last_live
        } else if self.live.get(next).is_some_and(|l| l.0 == key) {
            next
        } else if let Some(i) = self.live.iter().position(|l| l.0 == key) {
            i
        } else {
            let t = self
                .ev
                .schedulers
                .remove(&key)
                .unwrap_or_else(|| SchedulerTimeline::with_capacity(self.timeline_capacity));
            self.live.push((key, t));
            n
        };
        self.last_live = at;
        at
    }

    /// Puts the live schedulers back into `ev.schedulers` (see `live`).
    fn settle(&mut self) {
        for (k, t) in self.live.drain(..) {
            self.ev.schedulers.insert(k, t);
        }
        self.last_live = 0;
        self.live_epoch = self.live_epoch.wrapping_add(1);
    }

    /// The scheduler timeline a batch line of `source` at `line` goes into: `None` for another
    /// TP rank's line (the lowest TP rank's lines are kept; the others repeat the same batch
    /// and are counted as duplicates). Its first and last line are set to this one.
    pub(super) fn batch_target(
        &mut self,
        source: SourceId,
        line: u64,
        ranks: &RankTags,
    ) -> Option<&mut SchedulerTimeline> {
        let at = self.live_index(Self::key_for(source, ranks));
        self.batch_target_at(at, Loc { source, line }, ranks.tp)
    }

    /// [`Self::batch_target`] of a line at `loc` of TP rank `tp` whose scheduler is
    /// `live[at]` ([`Self::live_index`]; `last_live` is set to it).
    pub(super) fn batch_target_at(
        &mut self,
        at: usize,
        loc: Loc,
        tp: Option<u32>,
    ) -> Option<&mut SchedulerTimeline> {
        self.last_live = at;
        let sched = &mut self.live.get_mut(at)?.1;
        // Keep the lowest TP rank's lines; other TP ranks repeat the same batch.
        if sched.first.is_none() {
            sched.tp = tp;
            sched.first = Some(loc);
        } else if tp != sched.tp {
            match (tp, sched.tp) {
                (Some(new), Some(old)) if new < old => {
                    // A lower rank appeared late: treat its lines as the kept ones from now on.
                    sched.tp = Some(new);
                }
                _ => {
                    sched.duplicate_lines += 1;
                    return None;
                }
            }
        }
        sched.last = Some(loc);
        Some(sched)
    }
}
