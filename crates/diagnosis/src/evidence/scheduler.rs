//! One scheduler's facts: its identity ([`SchedulerKey`]), its bounded timelines of batch
//! samples ([`SchedulerTimeline`]) and the exact aggregates over every one of its lines.

use serde::Serialize;

use super::frozen;
use super::{BatchSample, DecodeSample, Loc, PrefillSample, SourceId, Timeline};

/// Identity of one scheduler process that prints batch lines.
///
/// Under TP only attention-TP rank 0 prints (SGLang `scheduler_metrics_mixin.py`,
/// spec §1.3), so a scheduler is identified by its DP rank and PP stage; TP ranks that
/// print the same batch (`--enable-metrics-for-all-schedulers`) are duplicates of it and are
/// not summed. Without a DP tag, schedulers in different files are different servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SchedulerKey {
    /// The source, when the line carries no DP rank (else `None`: DP ranks are global).
    pub source: Option<SourceId>,
    /// DP rank (`DPn` tag), if any.
    pub dp: Option<u32>,
    /// PP stage (`PPn` tag), if any.
    pub pp: Option<u32>,
}

impl std::fmt::Display for SchedulerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(dp) = self.dp {
            parts.push(format!("DP{dp}"));
        }
        if let Some(pp) = self.pp {
            parts.push(format!("PP{pp}"));
        }
        if parts.is_empty() {
            parts.push("rank 0".to_string());
        }
        write!(f, "{}", parts.join(" "))
    }
}

/// Exact maxima and sums over every line of one scheduler (never decimated).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Aggregates {
    /// Highest `#running-req` on any batch line (requests).
    pub max_running: Option<u64>,
    /// Highest `#queue-req` on any batch line (requests).
    pub max_queue: Option<u64>,
    /// Highest `token usage` on any batch line (fraction 0-1).
    pub max_usage: Option<f64>,
    /// Highest `gen throughput` on a decode line (tok/s).
    pub max_gen_tps: Option<f64>,
    /// Highest `mamba usage` (fraction 0-1).
    pub max_mamba_usage: Option<f64>,
    /// Highest `#prealloc-req` (requests).
    pub max_prealloc_req: Option<u64>,
    /// Σ `#new-token` over prefill lines (tokens).
    pub prefill_new_tokens: u64,
    /// Σ `#cached-token` over prefill lines (tokens).
    pub prefill_cached_tokens: u64,
    /// Largest `#new-token` of one prefill line (tokens).
    pub max_prefill_new_tokens: Option<u64>,
    /// Highest `input throughput` of a prefill line (tok/s): a lower bound on the rate prefill
    /// computes at (the figure's time includes whatever ran since the previous prefill line).
    pub max_input_tps: Option<f64>,
    /// Decode lines whose batch did not run as a graph.
    pub decode_without_graph: u64,
    /// Decode lines with a PD decode instance's fields (`#prealloc-req`, `#transfer-req`,
    /// `pre-allocated usage`: SGLang `disaggregation/decode.py`).
    pub pd_decode_lines: u64,
    /// Prefill lines with a PD prefill instance's fields (its bootstrap queue as
    /// `#prealloc-req`, or `#inflight-req` / `#transferring-req`: SGLang
    /// `disaggregation/prefill.py`).
    pub pd_prefill_lines: u64,
    /// Σ `fwd occupancy` over the batch lines that print a number (percent; with
    /// [`Self::occupancy_busy_lines`] their mean).
    pub occupancy_busy_sum_pct: f64,
    /// Batch lines whose `fwd occupancy` is a number.
    pub occupancy_busy_lines: u64,
    /// Batch lines whose `fwd occupancy` is `nan%`: windows without a forward pass.
    pub occupancy_idle_lines: u64,
}

/// Whether `a` and `b` hold the same samples apart from what `like(x, y)` takes from `y` into
/// `x` (e.g. the source: two copies of a log are two sources).
fn equal_but<T: PartialEq>(a: &[T], b: &[T], like: impl Fn(&T, &T) -> T) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| like(x, y) == *y)
}

pub(super) fn max_opt<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y > x { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// `*a = max_opt(*a, b)`, in place: the usual line raises no peak, and writes nothing (a
/// value rebuilt and stored for each of six peaks cost ~40 instructions a decode line).
#[inline]
fn raise<T: PartialOrd + Copy>(a: &mut Option<T>, b: Option<T>) {
    if let Some(y) = b {
        let higher = match a {
            Some(x) => y > *x,
            None => true,
        };
        if higher {
            *a = Some(y);
        }
    }
}

/// The batch lines of one scheduler, in log order.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SchedulerTimeline {
    /// The TP rank whose lines were kept (the lowest seen); other TP ranks' duplicates are counted in `duplicate_lines`.
    pub tp: Option<u32>,
    /// Decode samples (bounded; see [`Timeline`]).
    pub decode: Timeline<DecodeSample>,
    /// Prefill samples (bounded).
    pub prefill: Timeline<PrefillSample>,
    /// Exact aggregates over every kept-rank line.
    pub agg: Aggregates,
    /// Lines from other TP ranks of the same scheduler, skipped as duplicates.
    pub duplicate_lines: u64,
    /// Frozen `#token` runs over every kept-rank decode line (exact, whatever `decode` keeps).
    pub frozen: frozen::FrozenTracker,
    /// When this scheduler crashed (seconds, log clock): the first `Scheduler hit an
    /// exception` line (an out-of-memory error included) or watchdog timeout line with its
    /// scheduler's tags, after its first batch line. Its later batch lines are the
    /// `after_crash` phase ([`super::phases`]).
    pub crash_t: Option<f64>,
    /// First and last line of this scheduler's batch lines.
    pub first: Option<Loc>,
    /// Last batch line.
    pub last: Option<Loc>,
}

/// What identifies one decode line's content: time, running, queue, `#token`, gen throughput.
type DecodeKey = (
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
);

fn decode_key(d: &DecodeSample) -> DecodeKey {
    (
        d.t.map(f64::to_bits),
        d.running,
        d.queue,
        d.tokens,
        d.gen_tps.map(f64::to_bits),
    )
}

impl Aggregates {
    pub(super) fn merge(&mut self, o: &Aggregates) {
        self.max_running = max_opt(self.max_running, o.max_running);
        self.max_queue = max_opt(self.max_queue, o.max_queue);
        self.max_usage = max_opt(self.max_usage, o.max_usage);
        self.max_gen_tps = max_opt(self.max_gen_tps, o.max_gen_tps);
        self.max_mamba_usage = max_opt(self.max_mamba_usage, o.max_mamba_usage);
        self.max_prealloc_req = max_opt(self.max_prealloc_req, o.max_prealloc_req);
        self.prefill_new_tokens += o.prefill_new_tokens;
        self.prefill_cached_tokens += o.prefill_cached_tokens;
        self.max_prefill_new_tokens =
            max_opt(self.max_prefill_new_tokens, o.max_prefill_new_tokens);
        self.max_input_tps = max_opt(self.max_input_tps, o.max_input_tps);
        self.decode_without_graph += o.decode_without_graph;
        self.pd_decode_lines += o.pd_decode_lines;
        self.pd_prefill_lines += o.pd_prefill_lines;
        self.occupancy_busy_sum_pct += o.occupancy_busy_sum_pct;
        self.occupancy_busy_lines += o.occupancy_busy_lines;
        self.occupancy_idle_lines += o.occupancy_idle_lines;
    }

    /// One line's `fwd occupancy` into the sums.
    fn note_occupancy(&mut self, o: super::samples::Occupancy) {
        if let Some(p) = o.busy_pct() {
            self.occupancy_busy_lines += 1;
            self.occupancy_busy_sum_pct += p;
        } else if o == super::samples::Occupancy::IDLE {
            self.occupancy_idle_lines += 1;
        }
    }
}

impl SchedulerTimeline {
    /// An empty timeline whose decode and prefill samples are each bounded by `capacity`.
    pub fn with_capacity(capacity: usize) -> Self {
        SchedulerTimeline {
            decode: Timeline::with_capacity(capacity),
            prefill: Timeline::with_capacity(capacity),
            ..SchedulerTimeline::default()
        }
    }

    /// Record one decode sample: exact aggregates, then the bounded timeline.
    pub fn push_decode(&mut self, d: DecodeSample) {
        self.note_decode(&d, d.t, d.loc());
        self.decode.push(d);
    }

    /// The exact facts of one decode line `d` at `at` (time `t`, seconds): its aggregates and
    /// the frozen runs.
    // inline: once per decode line (~25 instructions of call and saved registers)
    #[inline(always)]
    pub(super) fn note_decode(&mut self, d: &DecodeSample, t: Option<f64>, at: Loc) {
        self.frozen.push(d.tokens, d.running, d.gen_tps, t, at);
        let agg = &mut self.agg;
        raise(&mut agg.max_running, d.running);
        raise(&mut agg.max_queue, d.queue);
        raise(&mut agg.max_usage, d.usage);
        raise(&mut agg.max_gen_tps, d.gen_tps);
        raise(&mut agg.max_mamba_usage, d.mamba_usage);
        raise(&mut agg.max_prealloc_req, d.prealloc_req);
        if d.graph == Some(false) {
            agg.decode_without_graph += 1;
        }
        agg.note_occupancy(d.occupancy);
        agg.pd_decode_lines += u64::from(
            d.prealloc_req.is_some() || d.transfer_req.is_some() || d.pre_allocated_usage.is_some(),
        );
    }

    /// Record one prefill sample: exact aggregates, then the bounded timeline.
    pub fn push_prefill(&mut self, p: PrefillSample) {
        self.note_prefill(&p);
        self.prefill.push(p);
    }

    /// The exact aggregates of one prefill sample.
    #[inline(always)]
    pub(super) fn note_prefill(&mut self, p: &PrefillSample) {
        let agg = &mut self.agg;
        raise(&mut agg.max_running, p.running);
        raise(&mut agg.max_queue, p.queue);
        raise(&mut agg.max_usage, p.usage);
        agg.prefill_new_tokens += p.new_token.unwrap_or(0);
        agg.prefill_cached_tokens += p.cached_token.unwrap_or(0);
        raise(&mut agg.max_prefill_new_tokens, p.new_token);
        raise(&mut agg.max_input_tps, p.input_tps);
        raise(&mut agg.max_prealloc_req, p.prealloc_req);
        agg.pd_prefill_lines += u64::from(p.prealloc_req.is_some() || p.inflight_req.is_some());
        agg.note_occupancy(p.occupancy);
    }

    /// Takes the peaks of `#running-req`, `#queue-req` and gen throughput again from the kept
    /// samples, after values were set aside (`outliers`): on a thinned timeline they are then
    /// the kept lines' peaks, no longer every line's.
    pub(super) fn retake_decode_peaks(&mut self) {
        let (d, p) = (self.decode.samples(), self.prefill.samples());
        let agg = &mut self.agg;
        agg.max_running = d
            .iter()
            .map(|x| x.running)
            .chain(p.iter().map(|x| x.running))
            .fold(None, max_opt);
        agg.max_queue = d
            .iter()
            .map(|x| x.queue)
            .chain(p.iter().map(|x| x.queue))
            .fold(None, max_opt);
        agg.max_gen_tps = d.iter().map(|x| x.gen_tps).fold(None, max_opt);
    }

    /// Whether both sample lists are in time order (untimed samples do not count).
    pub fn is_time_ordered(&self) -> bool {
        fn ordered(ts: impl Iterator<Item = f64>) -> bool {
            let mut prev = f64::NEG_INFINITY;
            ts.into_iter().all(|t| {
                let ok = t >= prev;
                prev = t;
                ok
            })
        }
        ordered(self.decode.samples().iter().filter_map(|d| d.t))
            && ordered(self.prefill.samples().iter().filter_map(|p| p.t))
    }

    /// Its decode samples by source and line, when it kept every line (rules that read what
    /// happened between consecutive lines need them all: between two kept samples of a thinned
    /// timeline, one line in `stride`, nothing is known). Keyed by source too: a scheduler
    /// joined from several files repeats line numbers.
    pub fn every_decode_line(
        &self,
    ) -> Option<std::collections::HashMap<(u32, u64), &DecodeSample>> {
        (self.decode.stride() == 1 && self.prefill.stride() == 1).then(|| {
            self.decode
                .samples()
                .iter()
                .map(|d| ((d.source, d.line), d))
                .collect()
        })
    }

    /// Whether `other` holds the same lines (the same file read twice, or its `.gz`): the same
    /// counts, TP rank and samples.
    pub fn same_lines(&self, other: &SchedulerTimeline) -> bool {
        self.tp == other.tp
            && self.decode.pushed() == other.decode.pushed()
            && self.prefill.pushed() == other.prefill.pushed()
            && equal_but(self.decode.samples(), other.decode.samples(), |x, y| {
                DecodeSample {
                    source: y.source,
                    ..*x
                }
            })
            && equal_but(self.prefill.samples(), other.prefill.samples(), |x, y| {
                PrefillSample {
                    source: y.source,
                    ..*x
                }
            })
    }

    /// The share of `other`'s decode lines inside this timeline's time range that this one holds
    /// too (the same time, running, queue, `#token` and gen throughput), when at least
    /// [`crate::thresholds::MIN_OVERLAP_LINES`] of them fall in the range: overlapping copies
    /// of one log (a part cut with overlap, another TP rank's file of the same batches).
    pub fn overlap_share(&self, other: &SchedulerTimeline) -> Option<f64> {
        let (from, to) = self.time_range()?;
        let mine: std::collections::HashSet<DecodeKey> =
            self.decode.samples().iter().map(decode_key).collect();
        let inside: Vec<DecodeKey> = other
            .decode
            .samples()
            .iter()
            .filter(|d| d.t.is_some_and(|t| t >= from && t <= to))
            .map(decode_key)
            .collect();
        (inside.len() >= crate::thresholds::MIN_OVERLAP_LINES).then(|| {
            inside.iter().filter(|k| mine.contains(k)).count() as f64 / inside.len() as f64
        })
    }

    /// Join `other`, an overlapping copy of this scheduler's log: its lines that this one does
    /// not hold are added, in time order; those it holds are counted as duplicates.
    pub(super) fn union_with(&mut self, other: &SchedulerTimeline) {
        let mine: std::collections::HashSet<DecodeKey> =
            self.decode.samples().iter().map(decode_key).collect();
        let mine_p: std::collections::HashSet<(Option<u64>, u64, Option<u64>)> = self
            .prefill
            .samples()
            .iter()
            .map(|p| (p.t.map(f64::to_bits), p.new_token.unwrap_or(0), p.queue))
            .collect();
        let mut decode: Vec<DecodeSample> = self.decode.samples().to_vec();
        let mut prefill: Vec<PrefillSample> = self.prefill.samples().to_vec();
        let mut dup = 0;
        for d in other.decode.samples() {
            if mine.contains(&decode_key(d)) {
                dup += 1;
            } else {
                decode.push(*d);
            }
        }
        for p in other.prefill.samples() {
            if mine_p.contains(&(p.t.map(f64::to_bits), p.new_token.unwrap_or(0), p.queue)) {
                dup += 1;
            } else {
                prefill.push(*p);
            }
        }
        let by_time = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => std::cmp::Ordering::Equal,
        };
        decode.sort_by(|a, b| by_time(a.t, b.t));
        prefill.sort_by(|a, b| by_time(a.t, b.t));
        let (tp, first, last) = (self.tp, self.first, other.last.or(self.last));
        let dups = self.duplicate_lines + other.duplicate_lines + dup;
        *self = SchedulerTimeline {
            tp,
            first,
            last,
            duplicate_lines: dups,
            ..SchedulerTimeline::default()
        };
        for d in decode {
            self.push_decode(d);
        }
        for p in prefill {
            self.push_prefill(p);
        }
    }

    /// Takes batch line `sample` at `at` (time `t`, seconds): its exact aggregates, and a copy
    /// with its time and place when the timeline keeps it (most lines of a long log are not
    /// kept: no copy of a ~240-byte sample is made for them).
    pub(super) fn offer(&mut self, sample: &BatchSample, t: Option<f64>, at: Loc) {
        // ok: a read of more than 4 billion sources is not possible; saturates if it were
        let source = u32::try_from(at.source).unwrap_or(u32::MAX);
        let line = at.line;
        match sample {
            BatchSample::Decode(d) => {
                self.note_decode(d, t, at);
                self.decode
                    .push_copy(d, |k| (k.t, k.line, k.source) = (t, line, source));
            }
            BatchSample::Prefill(p) => {
                self.note_prefill(p);
                self.prefill
                    .push_copy(p, |k| (k.t, k.line, k.source) = (t, line, source));
            }
        }
    }

    /// First and last timestamp of its batch lines (seconds).
    pub fn time_range(&self) -> Option<(f64, f64)> {
        let ts = self
            .decode
            .samples()
            .iter()
            .filter_map(|d| d.t)
            .chain(self.prefill.samples().iter().filter_map(|p| p.t));
        ts.fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((a, b)) => Some((a.min(t), b.max(t))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `raise` in place is `max_opt`, NaN readings and absent ones included.
    #[test]
    fn raise_is_max_opt() {
        let vals = [
            None,
            Some(f64::NAN),
            Some(-1.0),
            Some(0.0),
            Some(2.5),
            Some(2.5),
        ];
        for a in vals {
            for b in vals {
                let mut got = a;
                raise(&mut got, b);
                let want = max_opt(a, b);
                assert_eq!(format!("{got:?}"), format!("{want:?}"), "{a:?} {b:?}");
            }
        }
        let mut n = Some(3u64);
        raise(&mut n, Some(7));
        raise(&mut n, Some(5));
        raise(&mut n, None);
        assert_eq!(n, Some(7));
    }
}
