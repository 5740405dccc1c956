//! Evidence of one large log parsed on several cores.
//!
//! The parse of a record (the envelope, the batch fields, the typed accessors) is most of the
//! cost of reading a log, and it needs no state across lines; what the [`EvidenceBuilder`]
//! does with a record (the time unwrapped across midnight, the kept TP rank, retractions
//! matched across ranks, the bounded timelines) does, and it depends on the order. So a chunk
//! of the file is parsed on its own thread into [`ChunkFacts`]: for each batch line the owned
//! sample the builder would take from it, for each other line the builder uses (retractions,
//! startup lines, failures, the lines of a benchmark summary) its record: kept whole when its
//! event borrows nothing but its message (a traceback's lines, a retraction: the message is
//! copied, the rest is owned), else the line's bytes. The chunks' facts are then handed to
//! the builder in file order ([`EvidenceBuilder::push_chunk`]), which gives exactly the
//! evidence a sequential read gives: the batch samples are the same values, the kept records
//! are the reader's, and the other lines are parsed again with a [`sglang_log::LineParser`],
//! which gives the record the reader gave. (Parsing a retraction or traceback line again cost
//! ~3,100 instructions; a kept record is rebuilt in a few dozen.) Memory: a chunk's facts are
//! bounded by the chunk's size.

use super::{BatchSample, EvidenceBuilder, Loc, SourceId};
use sglang_log::{BatchKind, Event, RankTags, Record, Retraction, Timestamp};

/// What the builder takes from one record of a chunk.
#[derive(Clone, Debug)]
enum Fact {
    /// A batch line: its stamp, the index of its rank tags in [`ChunkFacts::groups`] and
    /// whether it is a prefill line; its sample is the next one of [`ChunkFacts::prefill`] or
    /// [`ChunkFacts::decode`] (line numbers count from the chunk start).
    Batch {
        ts: Option<Timestamp>,
        group: usize,
        prefill: bool,
    },
    /// Another line the builder uses whose record is kept: the next one of
    /// [`ChunkFacts::records`] (kept apart: a fact as large as a record was written whole
    /// for every batch line, ~15 instructions).
    Record,
    /// Any other line the builder uses: its number in the chunk and where its bytes are in
    /// [`ChunkFacts::text`].
    Line {
        line: u64,
        text: std::ops::Range<usize>,
    },
}

/// A record of a [`Fact::Record`]: its number in the chunk, stamp, rank tags, where its message
/// is in [`ChunkFacts::messages`], and its event.
#[derive(Clone, Debug)]
struct KeptRecord {
    line: u64,
    ts: Option<Timestamp>,
    ranks: RankTags,
    message: std::ops::Range<usize>,
    event: KeptEvent,
}

/// The event of a [`KeptRecord`]: one that borrows nothing but its record's message.
#[derive(Clone, Debug)]
enum KeptEvent {
    /// [`Event::Other`].
    Other,
    /// [`Event::TracebackStart`].
    TracebackStart,
    /// [`Event::Malformed`].
    Malformed(&'static str),
    /// [`Event::Retraction`], its text left empty, and where its text is in the message.
    Retraction(Retraction<'static>, std::ops::Range<usize>),
}

impl KeptEvent {
    /// The kept form of `event`, whose record's message is `message`: `None` for an event
    /// that borrows more than the message.
    fn of(event: &Event<'_>, message: &str) -> Option<Self> {
        Some(match event {
            Event::Other => KeptEvent::Other,
            Event::TracebackStart => KeptEvent::TracebackStart,
            Event::Malformed { reason } => KeptEvent::Malformed(reason),
            Event::Retraction(r) => {
                let at = within(message, r.text)?;
                KeptEvent::Retraction(
                    Retraction {
                        text: "",
                        ..r.clone()
                    },
                    at,
                )
            }
            _ => return None,
        })
    }

    /// The event again, its borrowed text from `message`.
    fn event<'a>(&self, message: &'a str) -> Event<'a> {
        match self {
            KeptEvent::Other => Event::Other,
            KeptEvent::TracebackStart => Event::TracebackStart,
            KeptEvent::Malformed(reason) => Event::Malformed { reason },
            KeptEvent::Retraction(r, at) => Event::Retraction(Retraction {
                text: message.get(at.clone()).unwrap_or_default(),
                ..r.clone()
            }),
        }
    }
}

/// Where `part` lies in `whole`, when it is a slice of it.
fn within(whole: &str, part: &str) -> Option<std::ops::Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= whole.len()).then_some(start..end)
}

/// Whether batch lines of tags `a` and `b` go to one scheduler as one TP rank
/// ([`EvidenceBuilder::batch_target`] reads their DP rank, PP stage and TP rank only; the
/// seven `Option`s of the whole tags cost ~25 instructions to compare).
#[cfg(test)]
fn same_scheduler(a: &RankTags, b: &RankTags) -> bool {
    a.dp == b.dp && a.pp == b.pp && a.tp == b.tp
}

/// The DP rank, PP stage and TP rank of `r` in one number, equal for two tags exactly when
/// their batch lines go to one scheduler as one TP rank (33 bits each: a flag that the tag is present, and its value):
/// one comparison per known tags, where three `Option`s cost ~12 instructions.
#[inline(always)]
fn scheduler_tags(r: &RankTags) -> u128 {
    let bits = |o: Option<u32>| o.map_or(0, |v| (1u128 << 32) | u128::from(v));
    bits(r.dp) | (bits(r.pp) << 33) | (bits(r.tp) << 66)
}

/// Bytes of a log per fact [`ChunkFacts::for_bytes`] makes room for: SGLang's batch lines are
/// 130-250 bytes, the lines between them (access lines, retractions) as long or longer.
pub const BYTES_PER_FACT: u64 = 128;

/// The facts of one chunk of a log, in line order (see the module doc). Lines the builder
/// ignores (malformed lines, stamped lines of no SGLang event) are not kept.
#[derive(Clone, Debug, Default)]
pub struct ChunkFacts {
    facts: Vec<Fact>,
    /// The decode lines' samples, in line order: `decode[..decodes]` are this chunk's, the
    /// rest the slots of an earlier chunk, each read over in place ([`BatchSample::read`] sets
    /// every field but the time and source, which the timeline's copy sets): a new slot is
    /// written whole first (~35 instructions a line).
    decode: Vec<BatchSample>,
    /// This chunk's decode lines.
    decodes: usize,
    /// The prefill lines' samples, as `decode`.
    prefill: Vec<BatchSample>,
    /// This chunk's prefill lines.
    prefills: usize,
    /// The distinct scheduler and TP rank tags of this chunk's batch lines (a handful: one
    /// per DP rank and TP rank that prints), so that the merge finds a line's scheduler once
    /// per tags and chunk ([`EvidenceBuilder::push_chunk`]), not once per line: each as
    /// [`scheduler_tags`] tells them apart.
    groups: Vec<RankTags>,
    /// The [`scheduler_tags`] of each of `groups`.
    group_tags: Vec<u128>,
    /// The index in `groups` of the last batch line's tags.
    last_group: usize,
    /// The bytes of the kept other lines, one after another: one buffer reused from chunk to
    /// chunk instead of an allocation per line on the parser thread freed on the merge thread.
    text: Vec<u8>,
    /// The kept records ([`Fact::Record`]), in line order.
    records: Vec<KeptRecord>,
    /// The messages of the kept records ([`Fact::Record`]), one after another (reused too).
    messages: String,
    /// No stack can be open at this point of the chunk: the last record was a batch line, or a
    /// line left out (`false` at the start of a chunk, which may begin inside a traceback).
    closed: bool,
}

impl ChunkFacts {
    /// Empty facts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty facts with room for the records of a chunk of `bytes` bytes (one fact per
    /// [`BYTES_PER_FACT`] bytes; more grow the list): a list grown one fact at a time was
    /// copied ~10 times over as it doubled (~300 bytes a fact), 13 M instructions and as many
    /// bytes copied for a 20 MB log.
    pub fn for_bytes(bytes: u64) -> Self {
        let facts = usize::try_from(bytes / BYTES_PER_FACT).unwrap_or(0);
        ChunkFacts {
            facts: Vec::with_capacity(facts),
            decode: Vec::with_capacity(facts),
            // SGLang prints a prefill line per scheduled batch, far fewer than decode lines
            prefill: Vec::with_capacity(facts / 4),
            ..Self::default()
        }
    }

    /// Takes one record of the chunk and the bytes of its line
    /// ([`sglang_log::LogReader::for_each_raw`]).
    // inline: into the reader's loop in the caller's crate (a call and its saved registers
    // cost ~20 instructions a line; a hint alone left it a call)
    #[inline(always)]
    pub fn push(&mut self, rec: &Record<'_>, raw: &[u8]) {
        // What `EvidenceBuilder::push` does nothing with: malformed lines, stamped lines of
        // no SGLang event and stamped access lines of answered requests, unless a
        // traceback may be open, which such a line ends (`StackCollector::push`): that is only
        // right after a kept line (a traceback's own lines are kept, and a batch line or a
        // left-out line ends any). Told apart after the batch line's arm, which needs it not
        // (before it, ~10 instructions a batch line).
        let ignored = || match &rec.event {
            Event::Malformed { .. } => true,
            Event::Other => rec.timestamp.is_some(),
            Event::HttpAccess(a) => rec.timestamp.is_some() && a.status < 400,
            _ => false,
        };
        match &rec.event {
            Event::Batch(b) => {
                let group = self.group_of(&rec.ranks);
                let prefill = b.kind == BatchKind::Prefill;
                self.facts.push(Fact::Batch {
                    ts: rec.timestamp,
                    group,
                    prefill,
                });
                // read in the list's slot: a sample made whole and then pushed was copied twice
                let (list, k) = if prefill {
                    (&mut self.prefill, &mut self.prefills)
                } else {
                    (&mut self.decode, &mut self.decodes)
                };
                if list.len() <= *k {
                    list.push(BatchSample::empty(b.kind));
                }
                if let Some(sample) = list.get_mut(*k) {
                    sample.read(rec.line_no, b);
                }
                *k += 1;
                self.closed = true;
            }
            _ if self.closed && ignored() => {}
            _ => {
                let ignored = ignored();
                if let Some(event) = KeptEvent::of(&rec.event, rec.message) {
                    let start = self.messages.len();
                    self.messages.push_str(rec.message);
                    self.facts.push(Fact::Record);
                    self.records.push(KeptRecord {
                        line: rec.line_no,
                        ts: rec.timestamp,
                        ranks: rec.ranks,
                        message: start..self.messages.len(),
                        event,
                    });
                } else {
                    let start = self.text.len();
                    self.text.extend_from_slice(raw);
                    self.facts.push(Fact::Line {
                        line: rec.line_no,
                        text: start..self.text.len(),
                    });
                }
                // a kept line that would have been left out ends a traceback that was open
                self.closed = ignored;
            }
        }
    }

    /// The index of `ranks` in [`Self::groups`], added when new: the last batch line's, or
    /// any other (a handful).
    // inline: the usual line's tags are known (an outlined lookup cost ~50 instructions a
    // line)
    #[inline(always)]
    fn group_of(&mut self, ranks: &RankTags) -> usize {
        let tags = scheduler_tags(ranks);
        let last = self.last_group;
        let at = if self.group_tags.get(last) == Some(&tags) {
            last
        } else if let Some(i) = self.group_tags.iter().position(|&g| g == tags) {
            i
        } else {
            self.new_group(ranks, tags)
        };
        self.last_group = at;
        at
    }

    /// Adds `ranks`, of [`scheduler_tags`] `tags`, to [`Self::groups`]; its index.
    #[inline(never)]
    fn new_group(&mut self, ranks: &RankTags, tags: u128) -> usize {
        self.groups.push(*ranks);
        self.group_tags.push(tags);
        self.groups.len() - 1
    }

    /// Records kept.
    pub fn len(&self) -> usize {
        self.facts.len()
    }

    /// Whether no record was kept.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }
}

impl EvidenceBuilder {
    /// Takes the facts of the next chunk of `source`, whose file has `lines_before` lines
    /// before the chunk, as [`EvidenceBuilder::push`] of each of its records would, and leaves
    /// `chunk` empty (its memory kept, for the next chunk).
    pub fn push_chunk(&mut self, source: SourceId, chunk: &mut ChunkFacts, lines_before: u64) {
        let ChunkFacts {
            facts,
            decode,
            decodes,
            prefill,
            prefills,
            groups,
            group_tags,
            last_group,
            records,
            text,
            messages,
            closed,
        } = chunk;
        // the scheduler of each rank tags of the chunk, found at its first line: (the
        // `live_epoch` it was found in, its index in `live`); stale once `live` is emptied
        let mut found = std::mem::take(&mut self.chunk_live);
        found.clear();
        found.resize(groups.len(), (self.live_epoch.wrapping_sub(1), 0));
        let mut decode = decode.get(..*decodes).unwrap_or_default().iter();
        let mut prefill = prefill.get(..*prefills).unwrap_or_default().iter();
        let mut kept = records.iter();
        // no record since the last batch line: the incident collector, which a batch line
        // leaves serving with no stack open, has nothing to learn from the next one, nor has
        // the source's `batch_seen`
        let mut serving = false;
        // the run notes of the batch lines since the last other line (`runs::Stretch`)
        let mut stretch = super::runs::Stretch::default();
        // by reference: a sample is ~250 bytes (`Copy`; only a kept TP rank's is copied into
        // its timeline)
        for f in facts.iter() {
            match f {
                Fact::Batch {
                    ts,
                    group,
                    prefill: p,
                } => {
                    let sample = if *p { prefill.next() } else { decode.next() };
                    let (Some(sample), Some(ranks)) = (sample, groups.get(*group)) else {
                        continue;
                    };
                    let line = lines_before + sample.line();
                    let loc = Loc { source, line };
                    let dated = ts
                        .as_ref()
                        .filter(|ts| ts.has_date())
                        .map(Timestamp::seconds)
                        .filter(|t| t.is_finite());
                    let t = match dated {
                        // the usual line: its time is its stamp's, and it begins no run
                        Some(t) if stretch.step(loc, t) => Some(t),
                        _ => {
                            self.close_stretch(&mut stretch);
                            let t = self.time_of_stamp(source, ts.as_ref());
                            // a new run begins with a fresh incident collector
                            if self.batch_run(loc, t) || !serving {
                                self.note_batch_seen(source);
                                self.incidents.push_batch_line(source, line);
                                serving = true;
                            }
                            stretch = self.open_stretch(source);
                            t
                        }
                    };
                    let Some(slot) = found.get_mut(*group) else {
                        continue;
                    };
                    if slot.0 != self.live_epoch {
                        *slot = (
                            self.live_epoch,
                            self.live_index(Self::key_for(source, ranks)),
                        );
                    }
                    if let Some(sched) = self.batch_target_at(slot.1, loc, ranks.tp) {
                        sched.offer(sample, t, loc);
                    }
                }
                Fact::Record => {
                    self.close_stretch(&mut stretch);
                    let Some(KeptRecord {
                        line,
                        ts,
                        ranks,
                        message,
                        event,
                    }) = kept.next()
                    else {
                        continue;
                    };
                    let message = messages.get(message.clone()).unwrap_or_default();
                    let rec = Record {
                        line_no: line + lines_before,
                        timestamp: *ts,
                        ranks: *ranks,
                        message,
                        event: event.event(message),
                    };
                    self.push(source, &rec);
                    serving = false;
                }
                Fact::Line { line, text: at } => {
                    self.close_stretch(&mut stretch);
                    let raw = text.get(at.clone()).unwrap_or_default();
                    let rec = self.reparse.parse(raw, line + lines_before);
                    self.push(source, &rec);
                    serving = false;
                }
            }
        }
        self.close_stretch(&mut stretch);
        self.chunk_live = found;
        facts.clear();
        records.clear();
        (*decodes, *prefills) = (0, 0);
        groups.clear();
        group_tags.clear();
        *last_group = 0;
        text.clear();
        messages.clear();
        *closed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sglang_log::LogReader;

    fn read(rel: &str) -> Vec<u8> {
        let path = format!("{}/../../tests/data/{rel}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The evidence of `logs` read line by line.
    fn sequential(logs: &[(&str, &[u8])]) -> String {
        let mut b = EvidenceBuilder::new();
        for (name, bytes) in logs {
            let id = b.add_source(*name);
            let stats = LogReader::from_reader(*name, *bytes)
                .for_each(|rec| b.push(id, rec))
                .unwrap();
            b.finish_source(id, &stats);
        }
        format!("{:?}", b.build())
    }

    /// The evidence of `logs`, each cut at line boundaries into `parts` chunks parsed on their
    /// own and handed over in order.
    fn chunked(logs: &[(&str, &[u8])], parts: usize) -> String {
        let mut b = EvidenceBuilder::new();
        for (name, bytes) in logs {
            let id = b.add_source(*name);
            let mut cuts = vec![0];
            for k in 1..parts {
                let at = bytes.len() * k / parts;
                let nl = bytes[at..].iter().position(|&c| c == b'\n');
                if let Some(i) = nl {
                    cuts.push(at + i + 1);
                }
            }
            cuts.push(bytes.len());
            cuts.dedup();
            let mut all = sglang_log::ParseStats::default();
            let mut before = 0;
            // one list for every chunk, as the CLI's pool reuses them: later chunks read their
            // samples over the earlier ones'
            let mut facts = ChunkFacts::new();
            for w in cuts.windows(2) {
                let mut stats = LogReader::from_reader(*name, &bytes[w[0]..w[1]])
                    .for_each_raw(|rec, raw| facts.push(rec, raw))
                    .unwrap();
                stats.shift_lines(before);
                if before == 0 {
                    all.head = stats.head;
                }
                b.push_chunk(id, &mut facts, before);
                before += stats.lines;
                all.merge(&stats);
            }
            b.finish_source(id, &all);
        }
        format!("{:?}", b.build())
    }

    #[test]
    fn chunks_in_order_give_the_sequential_evidence() {
        let files = [
            "real-long/rtx4090-qwen3-4b-kv-retraction.log",
            "real-long/ascend-dsr1-pd-decode-dp32.log",
            "real-long/ascend-qwen3next-80b-hybrid-mamba.log",
            "real/043-i4184-dsr1-2node-tp16-decode-oom-retract.log",
            "real/046-i2746-dsv3-usage100-tiny-batch-then-decode-oom.log",
        ];
        let data: Vec<(String, Vec<u8>)> = files.iter().map(|f| (f.to_string(), read(f))).collect();
        let logs: Vec<(&str, &[u8])> = data.iter().map(|(n, b)| (n.as_str(), &b[..])).collect();
        let want = sequential(&logs);
        // the retraction log has retractions, startup lines and batch lines of several kinds
        assert!(want.contains("retraction_lines: ") && !want.contains("retraction_lines: 0,"));
        for parts in [1, 2, 3, 7, 64] {
            assert_eq!(chunked(&logs, parts), want, "{parts} chunks");
        }
    }

    /// A traceback ends at the next stamped line, whatever it says (`StackCollector`): a
    /// stamped line of no SGLang event, or a malformed one, inside a scheduler's traceback
    /// must reach the builder from a chunk too, or the traceback runs on into later frames and
    /// a later exception line (here an out-of-memory one that the scheduler's own traceback
    /// never reached). Cut into every number of chunks, at every line.
    #[test]
    fn a_stamped_line_inside_a_traceback_ends_it_in_a_chunk_too() {
        let head = "[2026-02-09 16:00:00] Decode batch. #running-req: 10, #token: 9000, token usage: 0.02, cuda graph: True, gen throughput (token/s): 300.00, #queue-req: 0\n\
            [2026-02-09 16:00:01] Scheduler hit an exception: Traceback (most recent call last):\n  \
            File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", line 2000, in run_scheduler_process\n    \
            scheduler.event_loop_overlap()\n";
        let tail = "  File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", line 900, in event_loop_overlap\n    \
            batch = self.get_next_batch_to_run()\n  \
            File \"/sgl-workspace/sglang/python/sglang/srt/mem_cache/memory_pool.py\", line 123, in alloc\n    \
            raise RuntimeError(\"out of memory in KV pool\")\n\
            RuntimeError: out of memory in KV pool\n\
            [2026-02-09 16:00:02] Decode batch. #running-req: 9, #token: 8000, token usage: 0.02, cuda graph: True, gen throughput (token/s): 290.00, #queue-req: 0\n";
        for closer in [
            "[2026-02-09 16:00:01] Received sigquit from a child process. It usually means the child failed.\n",
            "[2026-02-09 16:00:01] Decode batch. #running-req: \u{fffd}\u{fffd} garbage\n",
        ] {
            let log = format!("{head}{closer}{tail}");
            let logs = [("log", log.as_bytes())];
            let want = sequential(&logs);
            // the scheduler's traceback ends at the closer: no out-of-memory exception in it
            assert!(want.contains("run_scheduler_process"), "{want}");
            assert!(!want.contains("out of memory in KV pool"), "{closer}");
            for parts in 1..=log.lines().count() {
                assert_eq!(chunked(&logs, parts), want, "{parts} chunks, {closer}");
            }
        }
    }

    #[test]
    fn chunks_split_server_runs_as_the_sequential_read_does() {
        // a restart: the b2 scenario after b1, and b2 after itself
        let (b1, b2) = (
            read("scenarios/kimi-k25-b1/server.log"),
            read("scenarios/kimi-k25-b2/server.log"),
        );
        let joined = [&b1[..], &b2[..], &b2[..]].concat();
        let logs = [("log", &joined[..])];
        let want = sequential(&logs);
        assert!(want.contains("earlier_runs: [Evidence"));
        for parts in [2, 7, 64] {
            assert_eq!(chunked(&logs, parts), want, "{parts} chunks");
        }
    }

    /// A sample of every field set, none to the value a line reads.
    fn dirty(kind: BatchKind) -> BatchSample {
        use super::super::{DecodeSample, Occupancy, PrefillSample};
        match kind {
            BatchKind::Decode => BatchSample::Decode(DecodeSample {
                t: Some(-1.0),
                line: u64::MAX,
                source: 7,
                running: Some(u64::MAX),
                queue: Some(u64::MAX),
                tokens: Some(u64::MAX),
                usage: Some(-1.0),
                gen_tps: Some(-1.0),
                graph: Some(true),
                accept_len: Some(-1.0),
                accept_rate: Some(-1.0),
                cap_len: Some(-1.0),
                pre_allocated_usage: Some(-1.0),
                prealloc_req: Some(u64::MAX),
                transfer_req: Some(u64::MAX),
                mamba_usage: Some(-1.0),
                swa_usage: Some(-1.0),
                npu: true,
                occupancy: Occupancy::IDLE,
            }),
            BatchKind::Prefill => BatchSample::Prefill(PrefillSample {
                t: Some(-1.0),
                line: u64::MAX,
                source: 7,
                new_seq: Some(u64::MAX),
                new_token: Some(u64::MAX),
                cached_token: Some(u64::MAX),
                running: Some(u64::MAX),
                queue: Some(u64::MAX),
                usage: Some(-1.0),
                mamba_usage: Some(-1.0),
                input_tps: Some(-1.0),
                graph: Some(true),
                prealloc_req: Some(u64::MAX),
                inflight_req: Some(u64::MAX),
                iter: Some(u64::MAX),
                occupancy: Occupancy::IDLE,
            }),
        }
    }

    /// A chunk reads a batch line over an earlier chunk's sample of its kind: every field but
    /// the time and source must come out as on a fresh sample, on every batch line of the
    /// shared logs.
    #[test]
    fn a_sample_read_over_an_old_one_is_the_fresh_read() {
        let mut batch = 0usize;
        for f in [
            "real-long/rtx4090-qwen3-4b-kv-retraction.log",
            "real-long/ascend-dsr1-pd-decode-dp32.log",
            "real-long/ascend-qwen3next-80b-hybrid-mamba.log",
            "real/043-i4184-dsr1-2node-tp16-decode-oom-retract.log",
        ] {
            let log = read(f);
            LogReader::from_reader("log", &log[..])
                .for_each(|rec| {
                    if let Event::Batch(b) = &rec.event {
                        batch += 1;
                        let mut s = dirty(b.kind);
                        s.read(rec.line_no, b);
                        match &mut s {
                            BatchSample::Decode(d) => (d.t, d.source) = (None, 0),
                            BatchSample::Prefill(p) => (p.t, p.source) = (None, 0),
                        }
                        let want = BatchSample::of(rec.line_no, b);
                        assert_eq!(format!("{s:?}"), format!("{want:?}"), "{f}:{}", rec.line_no);
                    }
                })
                .unwrap();
        }
        assert!(batch > 1_000, "{batch}");
    }

    #[test]
    fn a_chunk_keeps_batch_samples_and_the_lines_the_builder_uses_only() {
        let log = read("real-long/rtx4090-qwen3-4b-kv-retraction.log");
        let mut facts = ChunkFacts::new();
        let mut batch = 0usize;
        let stats = LogReader::from_reader("log", &log[..])
            .for_each_raw(|rec, raw| {
                batch += usize::from(matches!(rec.event, Event::Batch(_)));
                facts.push(rec, raw);
            })
            .unwrap();
        assert!(batch > 0);
        assert!(facts.len() >= batch);
        assert!(facts.len() < stats.lines as usize);
        assert!(!facts.is_empty());
    }

    /// Two tags have one `scheduler_tags` exactly when `same_scheduler` says they go to one
    /// scheduler as one TP rank, whatever the other tags say.
    #[test]
    fn scheduler_tags_tell_apart_what_same_scheduler_tells_apart() {
        let vals = [None, Some(0), Some(1), Some(4), Some(u32::MAX)];
        let mut all = Vec::new();
        for dp in vals {
            for pp in vals {
                for tp in vals {
                    for ep in [None, Some(2)] {
                        all.push(RankTags {
                            dp,
                            pp,
                            tp,
                            ep,
                            ..RankTags::default()
                        });
                    }
                }
            }
        }
        let mut same = 0;
        for a in &all {
            for b in &all {
                let s = same_scheduler(a, b);
                same += usize::from(s);
                assert_eq!(scheduler_tags(a) == scheduler_tags(b), s, "{a:?} {b:?}");
            }
        }
        assert_eq!(same, all.len() * 2);
    }
}
