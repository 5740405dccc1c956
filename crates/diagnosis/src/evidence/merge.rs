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
use sglang_log::{Event, RankTags, Record, Retraction, Timestamp};

/// What the builder takes from one record of a chunk.
// Batch lines are nearly every fact: boxing their sample would allocate once per line.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum Fact {
    /// A batch line: its stamp, rank tags and sample (line numbers count from the chunk start).
    Batch {
        ts: Option<Timestamp>,
        ranks: RankTags,
        sample: BatchSample,
    },
    /// Another line the builder uses whose record is kept: its number in the chunk, stamp,
    /// rank tags, where its message is in [`ChunkFacts::messages`], and its event.
    Record {
        line: u64,
        ts: Option<Timestamp>,
        ranks: RankTags,
        message: std::ops::Range<usize>,
        event: KeptEvent,
    },
    /// Any other line the builder uses: its number in the chunk and where its bytes are in
    /// [`ChunkFacts::text`].
    Line {
        line: u64,
        text: std::ops::Range<usize>,
    },
}

/// The event of a [`Fact::Record`]: one that borrows nothing but its record's message.
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

/// Bytes of a log per fact [`ChunkFacts::for_bytes`] makes room for: SGLang's batch lines are
/// 130-250 bytes, the lines between them (access lines, retractions) as long or longer.
pub const BYTES_PER_FACT: u64 = 128;

/// The facts of one chunk of a log, in line order (see the module doc). Lines the builder
/// ignores (malformed lines, stamped lines of no SGLang event) are not kept.
#[derive(Clone, Debug, Default)]
pub struct ChunkFacts {
    facts: Vec<Fact>,
    /// The bytes of the kept other lines, one after another: one buffer reused from chunk to
    /// chunk instead of an allocation per line on the parser thread freed on the merge thread.
    text: Vec<u8>,
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
            ..Self::default()
        }
    }

    /// Takes one record of the chunk and the bytes of its line
    /// ([`sglang_log::LogReader::for_each_raw`]).
    pub fn push(&mut self, rec: &Record<'_>, raw: &[u8]) {
        // What `EvidenceBuilder::push` does nothing with: malformed lines, stamped lines of
        // no SGLang event and stamped access lines of answered requests, unless a
        // traceback may be open, which such a line ends (`StackCollector::push`): that is only
        // right after a kept line (a traceback's own lines are kept, and a batch line or a
        // left-out line ends any).
        let ignored = match &rec.event {
            Event::Malformed { .. } => true,
            Event::Other => rec.timestamp.is_some(),
            Event::HttpAccess(a) => rec.timestamp.is_some() && a.status < 400,
            _ => false,
        };
        match &rec.event {
            Event::Batch(b) => {
                // read in the list's slot: a sample made whole and then pushed was copied twice
                self.facts.push(Fact::Batch {
                    ts: rec.timestamp,
                    ranks: rec.ranks,
                    sample: BatchSample::empty(b.kind),
                });
                if let Some(Fact::Batch { sample, .. }) = self.facts.last_mut() {
                    sample.read(rec.line_no, b);
                }
                self.closed = true;
            }
            _ if ignored && self.closed => {}
            _ => {
                if let Some(event) = KeptEvent::of(&rec.event, rec.message) {
                    let start = self.messages.len();
                    self.messages.push_str(rec.message);
                    self.facts.push(Fact::Record {
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
            text,
            messages,
            closed,
        } = chunk;
        // by reference: a fact is ~300 bytes, and moving each out of the list was a copy per
        // line (the samples are `Copy`; only a kept TP rank's is copied into its timeline)
        for f in facts.iter() {
            match f {
                Fact::Batch { ts, ranks, sample } => {
                    let line = lines_before + sample.line();
                    let t = self.time_of_stamp(source, ts.as_ref());
                    self.observe_batch(Loc { source, line }, t);
                    self.incidents.push_batch_line(source, line);
                    if let Some(sched) = self.batch_target(source, line, ranks) {
                        sched.offer(sample, t, Loc { source, line });
                    }
                }
                Fact::Record {
                    line,
                    ts,
                    ranks,
                    message,
                    event,
                } => {
                    let message = messages.get(message.clone()).unwrap_or_default();
                    let rec = Record {
                        line_no: line + lines_before,
                        timestamp: *ts,
                        ranks: *ranks,
                        message,
                        event: event.event(message),
                    };
                    self.push(source, &rec);
                }
                Fact::Line { line, text: at } => {
                    let raw = text.get(at.clone()).unwrap_or_default();
                    let rec = self.reparse.parse(raw, line + lines_before);
                    self.push(source, &rec);
                }
            }
        }
        facts.clear();
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
            for w in cuts.windows(2) {
                let mut facts = ChunkFacts::new();
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
}
