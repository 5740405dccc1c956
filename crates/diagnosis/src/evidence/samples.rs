//! The owned samples of one batch line each: a `Decode batch` line ([`DecodeSample`]) and a
//! `Prefill batch` line ([`PrefillSample`]), and either of them as read ([`BatchSample`]).

use serde::Serialize;
use sglang_log::{BatchKind, BatchLine};

#[cfg(doc)]
use super::Evidence;
use super::{Loc, SourceId};

/// One `Decode batch` line, owned. Times are seconds (see [`sglang_log::Timestamp::seconds`],
/// unwrapped across midnight for date-less logs); `None` when the line has no timestamp.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DecodeSample {
    /// Seconds.
    pub t: Option<f64>,
    /// 1-based line number in its source.
    pub line: u64,
    /// Its source: an index into [`Evidence::sources`] (a [`SourceId`], narrowed so that the
    /// sample stays 240 bytes). A joined scheduler's samples come from several sources.
    pub source: u32,
    /// `#running-req` (requests).
    pub running: Option<u64>,
    /// `#queue-req` (requests).
    pub queue: Option<u64>,
    /// `#token` (KV slots in use, tokens).
    pub tokens: Option<u64>,
    /// `token usage` (fraction 0-1); for hybrid models the full-attention pool.
    pub usage: Option<f64>,
    /// `gen throughput (token/s)`.
    pub gen_tps: Option<f64>,
    /// Whether the batch ran as a captured CUDA/NPU graph.
    pub graph: Option<bool>,
    /// `accept len` (tokens per verify step, speculative decoding).
    pub accept_len: Option<f64>,
    /// `accept rate` (fraction 0-1, speculative decoding; its definition depends on the version,
    /// spec §2.5).
    pub accept_rate: Option<f64>,
    /// `cap len` (tokens per verify step, DSpark/DFLASH speculative decoding).
    pub cap_len: Option<f64>,
    /// PD decode: `pre-allocated usage` (fraction 0-1).
    pub pre_allocated_usage: Option<f64>,
    /// PD decode: `#prealloc-req` (requests).
    pub prealloc_req: Option<u64>,
    /// PD decode: `#transfer-req` (requests).
    pub transfer_req: Option<u64>,
    /// `mamba usage` (fraction 0-1), hybrid SSM models.
    pub mamba_usage: Option<f64>,
    /// `swa token usage` (fraction 0-1), hybrid sliding-window models: the SWA pool, against
    /// its own size (spec §2.6).
    pub swa_usage: Option<f64>,
    /// The graph flag reads `npu graph`: an Ascend NPU build (whose KV cache has no fp8).
    pub npu: bool,
    /// `fwd occupancy` (device timer on).
    pub occupancy: Occupancy,
}

/// A batch line's `fwd occupancy` as a sample keeps it, in two bytes so that a decode sample
/// stays within its size: hundredths of a percent (8731 is 87.31%; SGLang's figure is at most
/// 150%, the parser's limit), or one of two codes above any reading: [`Self::ABSENT`] (the
/// line does not print it: `SGLANG_ENABLE_METRICS_DEVICE_TIMER` off, or older SGLang) and
/// [`Self::IDLE`] (`nan%`: the device timer measured no window).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Occupancy(u16);

impl Default for Occupancy {
    fn default() -> Self {
        Occupancy::ABSENT
    }
}

impl Occupancy {
    /// The line does not print the field.
    pub const ABSENT: Occupancy = Occupancy(u16::MAX);
    /// `nan%`.
    pub const IDLE: Occupancy = Occupancy(u16::MAX - 1);

    /// The reading of a parsed line.
    pub fn of(o: Option<sglang_log::FwdOccupancy>) -> Self {
        match o {
            None => Occupancy::ABSENT,
            Some(sglang_log::FwdOccupancy::Idle) => Occupancy::IDLE,
            Some(sglang_log::FwdOccupancy::Busy(f)) => {
                Occupancy((f * 10_000.0).round().clamp(0.0, f64::from(u16::MAX - 2)) as u16)
            }
        }
    }

    /// The busy share in percent, when the line gives a number.
    pub fn busy_pct(self) -> Option<f64> {
        (self.0 < u16::MAX - 1).then(|| f64::from(self.0) / 100.0)
    }
}

impl DecodeSample {
    /// Where the line is.
    pub fn loc(&self) -> Loc {
        Loc {
            source: self.source as SourceId,
            line: self.line,
        }
    }
}

/// One `Prefill batch` line, owned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PrefillSample {
    /// Seconds (see [`DecodeSample::t`]).
    pub t: Option<f64>,
    /// 1-based line number in its source.
    pub line: u64,
    /// Its source (see [`DecodeSample::source`]).
    pub source: u32,
    /// `#new-seq` (requests).
    pub new_seq: Option<u64>,
    /// `#new-token` (tokens computed in this batch).
    pub new_token: Option<u64>,
    /// `#cached-token` (prefix tokens reused).
    pub cached_token: Option<u64>,
    /// `#running-req` (requests).
    pub running: Option<u64>,
    /// `#queue-req` (requests).
    pub queue: Option<u64>,
    /// `token usage` (fraction 0-1).
    pub usage: Option<f64>,
    /// `mamba usage` of a hybrid SSM model (fraction of the mamba-state slots, 0-1).
    pub mamba_usage: Option<f64>,
    /// `input throughput (token/s)`: the batch's new tokens over the time since the previous
    /// prefill line (SGLang `scheduler_metrics_mixin.py` `log_prefill_stats`), so at most the
    /// rate prefill computes at (tok/s).
    pub input_tps: Option<f64>,
    /// The graph flag (`cuda graph: True`), printed on prefill lines from v0.5.9, when the line
    /// moved after the forward: its `token usage` then includes the batch's own KV (spec
    /// §2.2.1); without it the usage was read before the batch was allocated.
    pub graph: Option<bool>,
    /// PD prefill: `#prealloc-req` / `#bootstrap-req` (requests).
    pub prealloc_req: Option<u64>,
    /// PD prefill: `#inflight-req` (requests).
    pub inflight_req: Option<u64>,
    /// The forward-iteration counter of `Prefill batch [N]` (v0.5.4+, or
    /// `SGLANG_LOG_FORWARD_ITERS=1`).
    pub iter: Option<u64>,
    /// `fwd occupancy` (device timer on).
    pub occupancy: Occupancy,
}

impl PrefillSample {
    /// Where the line is.
    pub fn loc(&self) -> Loc {
        Loc {
            source: self.source as SourceId,
            line: self.line,
        }
    }
}

/// The sample of one batch line, owned (its time `t` is set by the builder, which unwraps it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum BatchSample {
    /// A `Decode batch` line.
    Decode(DecodeSample),
    /// A `Prefill batch` line.
    Prefill(PrefillSample),
}

impl BatchSample {
    /// The line number of the sample.
    pub(super) fn line(&self) -> u64 {
        match self {
            BatchSample::Decode(d) => d.line,
            BatchSample::Prefill(p) => p.line,
        }
    }

    /// The sample of batch line `b` (line number `line`), without its time and source (set by
    /// [`SchedulerTimeline::offer`] on the copy a timeline keeps).
    pub(crate) fn of(line: u64, b: &BatchLine<'_>) -> Self {
        let mut s = Self::empty(b.kind);
        s.read(line, b);
        s
    }

    /// An empty sample of a batch line of kind `kind` (for [`Self::read`]).
    pub(crate) fn empty(kind: BatchKind) -> Self {
        match kind {
            BatchKind::Decode => BatchSample::Decode(DecodeSample::default()),
            BatchKind::Prefill => BatchSample::Prefill(PrefillSample::default()),
        }
    }

    /// Reads batch line `b` (line number `line`) into this sample, made by [`Self::empty`] of
    /// its kind, in place: a sample made whole and then moved into a list was copied twice
    /// (~300 bytes each time; `merge.rs` reads each batch line of a chunk into the list's
    /// slot). Its time and source are left as they are. The usual line (its keys the usual
    /// ones only) is read in one pass ([`BatchLine::usual_decode`],
    /// [`BatchLine::usual_prefill`]), any other by every accessor. Inlined into the chunk
    /// read, its one caller (a call and its register saves were ~20 instructions a line).
    #[inline(always)]
    pub(crate) fn read(&mut self, line: u64, b: &BatchLine<'_>) {
        match self {
            BatchSample::Decode(d) => {
                d.line = line;
                if let Some(r) = b.usual_decode() {
                    // the usual line, read in one pass: no other key has a field, each
                    // reading below is absent, the graph flag is `cuda graph`'s
                    d.running = r.running;
                    d.queue = r.queue;
                    d.tokens = r.tokens;
                    d.usage = r.usage;
                    d.gen_tps = r.gen_tps;
                    d.graph = r.graph;
                    d.npu = false;
                    d.accept_len = r.accept_len;
                    d.accept_rate = None;
                    d.cap_len = None;
                    d.pre_allocated_usage = None;
                    d.prealloc_req = None;
                    d.transfer_req = None;
                    d.mamba_usage = None;
                    d.swa_usage = None;
                    d.occupancy = Occupancy::ABSENT;
                } else {
                    decode_by_accessors(d, b);
                }
            }
            BatchSample::Prefill(p) => {
                p.line = line;
                p.iter = b.iter;
                if let Some(r) = b.usual_prefill() {
                    // as a decode line's: the usual keys only, in one pass
                    p.new_seq = r.new_seq;
                    p.new_token = r.new_token;
                    p.cached_token = r.cached_token;
                    p.running = r.running;
                    p.queue = r.queue;
                    p.usage = r.usage;
                    p.mamba_usage = None;
                    p.input_tps = r.input_tps;
                    p.graph = r.graph;
                    p.prealloc_req = None;
                    p.inflight_req = None;
                    p.occupancy = Occupancy::ABSENT;
                } else {
                    prefill_by_accessors(p, b);
                }
            }
        }
    }
}

/// The readings of decode line `b` by every accessor, into `d` (any line that is not the
/// usual one: [`BatchSample::read`] reads that in one pass). Kept out of line: the usual
/// line's read stays small where it is inlined.
#[inline(never)]
fn decode_by_accessors(d: &mut DecodeSample, b: &BatchLine<'_>) {
    d.running = b.running_req();
    d.queue = b.queue_req();
    d.tokens = b.num_token();
    d.usage = b.token_usage();
    d.gen_tps = b.gen_throughput();
    (d.graph, d.npu) = b.graph_on_npu();
    d.accept_len = b.accept_len();
    d.accept_rate = b.accept_rate();
    d.cap_len = b.cap_len();
    d.pre_allocated_usage = b.pre_allocated_usage();
    d.prealloc_req = b.prealloc_req();
    d.transfer_req = b.transfer_req();
    d.mamba_usage = b.mamba_usage();
    d.swa_usage = b.swa_token_usage();
    d.occupancy = Occupancy::of(b.fwd_occupancy());
}

/// [`decode_by_accessors`] of a prefill line.
#[inline(never)]
fn prefill_by_accessors(p: &mut PrefillSample, b: &BatchLine<'_>) {
    p.new_seq = b.new_seq();
    p.new_token = b.new_token();
    p.cached_token = b.cached_token();
    p.running = b.running_req();
    p.queue = b.queue_req();
    p.usage = b.token_usage();
    p.mamba_usage = b.mamba_usage();
    p.input_tps = b.input_throughput();
    p.graph = b.graph_on_npu().0;
    p.prealloc_req = b.prealloc_req();
    p.inflight_req = b.inflight_req();
    p.occupancy = Occupancy::of(b.fwd_occupancy());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every accessor asked, as `read` did before it skipped the absent ones.
    fn read_all(line: u64, b: &BatchLine<'_>) -> BatchSample {
        let mut s = BatchSample::empty(b.kind);
        match &mut s {
            BatchSample::Decode(d) => {
                d.line = line;
                d.running = b.running_req();
                d.queue = b.queue_req();
                d.tokens = b.num_token();
                d.usage = b.token_usage();
                d.gen_tps = b.gen_throughput();
                let flag = b.graph_flag();
                d.graph = flag.and_then(|(_, on)| on);
                d.npu = flag.is_some_and(|(device, _)| device == "npu");
                d.accept_len = b.accept_len();
                d.accept_rate = b.accept_rate();
                d.cap_len = b.cap_len();
                d.pre_allocated_usage = b.pre_allocated_usage();
                d.prealloc_req = b.prealloc_req();
                d.transfer_req = b.transfer_req();
                d.mamba_usage = b.mamba_usage();
                d.swa_usage = b.swa_token_usage();
                d.occupancy = Occupancy::of(b.fwd_occupancy());
            }
            BatchSample::Prefill(p) => {
                p.line = line;
                p.new_seq = b.new_seq();
                p.new_token = b.new_token();
                p.cached_token = b.cached_token();
                p.running = b.running_req();
                p.queue = b.queue_req();
                p.usage = b.token_usage();
                p.mamba_usage = b.mamba_usage();
                p.input_tps = b.input_throughput();
                p.graph = b.graph();
                p.prealloc_req = b.prealloc_req();
                p.inflight_req = b.inflight_req();
                p.iter = b.iter;
                p.occupancy = Occupancy::of(b.fwd_occupancy());
            }
        }
        s
    }

    /// Bits of a sample (a NaN reading compares unequal to itself as an `f64`).
    fn bits(s: &BatchSample) -> String {
        format!("{s:?}")
    }

    fn logs(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                logs(&p, out);
            } else if p.extension().is_some_and(|x| x == "log") {
                out.push(p);
            }
        }
    }

    /// The read that skips the accessors of absent keys gives every accessor's answer, on
    /// every batch line of the shared logs.
    #[test]
    fn read_equals_every_accessor_on_real_lines() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
        let mut files = Vec::new();
        logs(&root, &mut files);
        assert!(files.len() > 20, "{}", root.display());
        let mut batch = 0usize;
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            sglang_log::LogReader::from_reader("log", &bytes[..])
                .for_each(|rec| {
                    if let sglang_log::Event::Batch(b) = &rec.event {
                        batch += 1;
                        let got = BatchSample::of(rec.line_no, b);
                        let want = read_all(rec.line_no, b);
                        assert_eq!(bits(&got), bits(&want), "{}:{}", f.display(), rec.line_no);
                    }
                })
                .unwrap();
        }
        assert!(batch > 10_000, "{batch}");
    }
}
