//! Views over the evidence that every rule reads: one scheduler's batch lines on a common
//! footing ([`Obs`]), its steady span and the time-weighted gauges over it ([`SchedulerView`]),
//! and the capacity facts that startup lines, server args and server info give together.

use crate::context::Context;
use crate::evidence::phases;
use crate::evidence::{
    DecodeSample, Evidence, PrefillSample, SchedulerKey, SchedulerTimeline, collect_within,
};
use crate::report::{
    CapacitySummary, GaugeStats, PhaseKind, Rate, RateBasis, RetractionSummary, Span, SpanBasis,
    Unit,
};
use crate::thresholds as th;

use super::gauges;
pub use super::gauges::{gauge, is_sorted, rate_gauge, share};

mod obs;
pub use obs::{Obs, merged_obs};

/// Which lines the steady figures take ([`Span`]'s steady window less the lines
/// [`Span::left_out_at`] leaves out), its phases read once: a line without a time, or any line
/// of a scheduler without a span, is taken.
struct SteadyWindow {
    /// The steady window (seconds), when there is a span.
    window: Option<(f64, f64)>,
    /// The stretches left out inside it (seconds): `(start, end, ends included)`.
    left_out: Vec<(f64, f64, bool)>,
}

impl SteadyWindow {
    fn of(span: &Option<Span>) -> Self {
        let Some(s) = span else {
            return SteadyWindow {
                window: None,
                left_out: Vec::new(),
            };
        };
        let left_out = s
            .phases
            .iter()
            .filter_map(|p| match p.kind {
                PhaseKind::Stalled | PhaseKind::AfterCrash => Some((p.start_s, p.end_s, true)),
                PhaseKind::BusyGap => Some((p.start_s, p.end_s, false)),
                _ => None,
            })
            .collect();
        SteadyWindow {
            window: Some((s.steady_start_s, s.steady_end_s)),
            left_out,
        }
    }

    /// Whether a line at `t` is taken: what `in_span` was, the phases not read again for each
    /// line.
    #[inline]
    fn holds(&self, t: Option<f64>) -> bool {
        match (t, self.window) {
            (Some(t), Some((from, to))) => {
                t >= from
                    && t <= to
                    && !self.left_out.iter().any(|&(a, b, closed)| {
                        if closed {
                            t >= a && t <= b
                        } else {
                            t > a && t < b
                        }
                    })
            }
            _ => true,
        }
    }
}

/// The steady span, from the running-requests series of decode lines (prefill lines when the
/// scheduler prints no decode lines, e.g. a PD prefill server). A burst-shaped run (ramp,
/// saturation, drain) has no steady state: MSER stops at its search limit and the "steady"
/// span would be the drain, so the whole log is used instead ([`SpanBasis::NoSteadyState`]).
pub fn find_span(tl: &SchedulerTimeline, obs: &[Obs]) -> Option<Span> {
    let samples = tl.decode.samples();
    let decode: Vec<(f64, f64)> = collect_within(
        samples.len(),
        samples
            .iter()
            .filter_map(|d| Some((d.t?, d.running? as f64))),
    );
    let series: Vec<(f64, f64)> = if decode.len() >= 2 {
        decode
    } else {
        collect_within(
            obs.len(),
            obs.iter().filter_map(|o| Some((o.t?, o.running? as f64))),
        )
    };
    if series.len() < 2 || !is_sorted(&series) {
        return None;
    }
    let start_s = series[0].0;
    let end_s = series[series.len() - 1].0;
    let timestamp_resolution_s = if series.iter().all(|p| whole(p.0)) {
        1.0
    } else {
        0.0
    };
    let whole = |basis| Span {
        start_s,
        end_s,
        steady_start_s: start_s,
        steady_end_s: end_s,
        timestamp_resolution_s,
        basis,
        method: String::new(),
        phases: Vec::new(),
    };
    Some(match throughput_stats::detect_phases(&series) {
        Ok(p) => match p.method {
            throughput_stats::PhaseMethod::Mser5 {
                ramp_batches,
                at_search_limit: true,
                ..
            } => whole(SpanBasis::NoSteadyState { ramp_batches }),
            throughput_stats::PhaseMethod::Mser5 {
                ramp_batches,
                drain_batches,
                ..
            } => Span {
                start_s,
                end_s,
                steady_start_s: p.steady.0,
                steady_end_s: p.steady.1,
                timestamp_resolution_s,
                basis: SpanBasis::Steady {
                    ramp_batches,
                    drain_batches,
                },
                method: String::new(),
                phases: Vec::new(),
            },
            throughput_stats::PhaseMethod::WholeSpan { .. } => whole(SpanBasis::TooFewPoints),
        },
        Err(_) => whole(SpanBasis::TooFewPoints),
    })
}

/// Whether `x` is a whole number (`x.fract() == 0.0`, which calls libm's `trunc` for each
/// time on x86-64 without SSE 4.1: ~17 instructions a line): below 2^63 in size, what the
/// truncating cast gives back; at or above it, every finite value is whole.
fn whole(x: f64) -> bool {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x.abs() < TWO_63 {
        (x as i64) as f64 == x
    } else {
        x.is_finite()
    }
}

/// Narrows `span`'s steady window to the steady phase of [`phases::find`] (warm-up, idle and
/// busy gaps, other bursts, the KV fill, the drain and the lines after a crash left out) and
/// records the phases. A span MSER judged burst-shaped keeps its basis; its phases are
/// recorded all the same. Stalls and busy gaps inside the window are left out line by line
/// ([`Span::left_out_at`]), as are the lines after a crash whatever the basis.
fn apply_phases(span: &mut Span, tl: &SchedulerTimeline, marks: &phases::Marks, idle_gap_s: f64) {
    let ramp_end = span
        .basis
        .is_steady()
        .then_some(span.steady_start_s)
        .filter(|&t| t > span.start_s);
    let Some(p) = phases::find_at(tl.decode.samples(), ramp_end, marks, idle_gap_s) else {
        return;
    };
    if span.basis.is_steady() {
        span.steady_start_s = p.steady_start_s.max(span.steady_start_s);
        span.steady_end_s = p.steady_end_s.min(span.steady_end_s);
        if span.steady_end_s < span.steady_start_s {
            span.steady_end_s = span.steady_start_s;
        }
    } else if p.main_stands_apart {
        // burst-shaped over the whole log, but the main segment stands apart (idle gaps, a
        // warm-up): judge that segment; with its ramp and drain cut, it is a steady span
        span.steady_start_s = p.steady_start_s;
        span.steady_end_s = p.steady_end_s;
        if p.ramp_or_drain {
            span.basis = SpanBasis::SaturatedBurst;
        }
    }
    span.phases = p.phases;
}

/// One scheduler seen over its steady span: the samples inside it and the gauges over them.
#[derive(Clone, Debug)]
pub struct SchedulerView<'e> {
    /// Which scheduler.
    pub key: SchedulerKey,
    /// Its whole timeline (peaks and aggregates cover every line).
    pub tl: &'e SchedulerTimeline,
    /// Its spans, when lines carry timestamps.
    pub span: Option<Span>,
    /// Every batch line of its timeline, in time order ([`merged_obs`], made once for the
    /// rules that walk the whole run).
    pub obs: Vec<Obs>,
    /// Batch lines inside the steady span, in time order.
    pub steady: Vec<Obs>,
    /// Decode samples inside the steady span.
    pub steady_decode: Vec<DecodeSample>,
    /// Prefill samples inside the steady span.
    pub steady_prefill: Vec<PrefillSample>,
    /// `#running-req` over the steady span (requests).
    pub running: GaugeStats,
    /// The standing queue over the steady span (requests): from decode lines when any has a
    /// queue (a prefill line is printed exactly when queued requests are admitted, so its queue
    /// is biased upward), else from prefill lines.
    pub queued: GaugeStats,
    /// `token usage` over the steady span (fraction).
    pub usage: GaugeStats,
    /// `gen throughput` over the steady span (tok/s).
    pub gen_tps: GaugeStats,
    /// Share of the standing-queue samples with `#queue-req` > 0.
    pub queued_share: Option<f64>,
    /// Whether the standing queue ([`SchedulerView::queued`]) comes from decode lines (else
    /// from prefill lines, when no decode line prints a queue).
    pub queue_from_decode: bool,
    /// Share of steady lines with token usage ≥ [`th::KV_FULL_USAGE`].
    pub full_share: Option<f64>,
    /// Line numbers of the decode lines whose `gen throughput` window includes time without
    /// decoding ([`phases::first_window_lines`]), in line order; their readings are left out
    /// of `steady_decode`.
    pub first_windows: Vec<u64>,
    /// The upper median interval between the steady decode lines (seconds), when every one
    /// has a time: the interval a gauge over their clock holds its last reading for, and the
    /// admission model's last step's weight (selected once for both).
    pub(crate) steady_interval: Option<f64>,
    /// Whether every pool the steady decode lines report has room
    /// ([`crate::evidence::pools`]).
    pub pool_room: crate::evidence::pools::PoolRoom,
    /// The running count every steady decode line of every scheduler shows, when they all
    /// show one and requests wait on some ([`views`]; `rules::running_cap::pinned`): a cap the
    /// log does not print, seen across the ranks.
    pub pinned_across_ranks: Option<u64>,
    /// The admission model, made once for the capacity and pinned cap it was first asked with
    /// ([`crate::rules::admission::model`]: the verdict, its finding and the scheduler's row
    /// all read it).
    pub(crate) admission: AdmissionMemo,
    /// The `prefill_limit` rule's facts, made once for the capacity they were first asked with
    /// (the verdict's steps, the admission model and the findings all read them).
    pub(crate) prefill_limit: PrefillLimitMemo,
}

/// The `prefill_limit` rule's facts on a view with the capacity they were judged with.
pub(crate) type PrefillLimitMemo =
    std::sync::OnceLock<(CapacitySummary, Option<crate::report::prefill_limit::Facts>)>;

/// The admission model of a view with what it was made from (the capacity and the pinned cap).
pub(crate) type AdmissionMemo = std::sync::OnceLock<(
    CapacitySummary,
    Option<u64>,
    Option<crate::report::Admission>,
)>;

impl<'e> SchedulerView<'e> {
    /// The view of one scheduler.
    pub fn new(key: SchedulerKey, tl: &'e SchedulerTimeline) -> Self {
        let obs = merged_obs(tl);
        let mut span = find_span(tl, &obs);
        // the idle gap of the decode lines, taken once for the phases and the first windows
        let idle_gap_s = phases::idle_gap_s(tl.decode.samples());
        // the marks' sorted prefill times serve the first windows too
        let marks = phases::Marks::of(tl);
        if let Some(sp) = span.as_mut() {
            apply_phases(sp, tl, &marks, idle_gap_s);
        }
        let first_windows = phases::first_window_lines_at(
            tl.decode.samples(),
            tl.prefill.samples(),
            &marks.prefill_t,
            idle_gap_s,
        );
        // the steady lines copied by plain loops: through `collect_within`'s filters each copy
        // was a closure call; and copied from their place into the list (`extend_from_slice`:
        // one `memcpy` a line, where `push` of a copy made two)
        let window = SteadyWindow::of(&span);
        let mut steady: Vec<Obs> = Vec::with_capacity(obs.len());
        for o in &obs {
            if window.holds(o.t) {
                steady.extend_from_slice(std::slice::from_ref(o));
            }
        }
        // a reading whose window includes idle time is no decode rate (`phases/`)
        let decode = tl.decode.samples();
        let mut steady_decode: Vec<DecodeSample> = Vec::with_capacity(decode.len());
        for d in decode {
            if window.holds(d.t) {
                steady_decode.extend_from_slice(std::slice::from_ref(d));
                if !first_windows.is_empty()
                    && first_windows.binary_search(&d.line).is_ok()
                    && let Some(last) = steady_decode.last_mut()
                {
                    last.gen_tps = None;
                }
            }
        }
        let prefill = tl.prefill.samples();
        let mut steady_prefill: Vec<PrefillSample> = Vec::with_capacity(prefill.len());
        for p in prefill {
            if window.holds(p.t) {
                steady_prefill.extend_from_slice(std::slice::from_ref(p));
            }
        }
        // the steady decode lines' median interval, taken once for the gauges over their clock
        // (a series with a reading on every line has every line's time) and the admission model
        let (steady_interval, clock) =
            gauges::interval_and_clock(steady_decode.iter().map(|d| d.t));
        // the gauges of the steady decode lines, read from the lines (`gauge_of`)
        // (a generic function for each gauge: through a function pointer each reading was a
        // call, ~0.1 M instructions a gauge)
        let decode_times = |d: &DecodeSample| d.t;
        let on = (steady_interval, clock.as_ref());
        let of_steady = |read: fn(&Obs) -> Option<f64>| {
            gauge(&collect_within(
                steady.len(),
                steady.iter().filter_map(|o| Some((o.t, read(o)?))),
            ))
        };
        // A prefill line counts the running batch before its own new requests join
        // (`log_prefill_stats`: `#running-req` is the running batch the prefill is merged
        // into), so the running requests come from the decode lines when there are any.
        let running = gauges::gauge_of(
            &steady_decode,
            decode_times,
            |d| Some(d.running? as f64),
            on,
        )
        .unwrap_or_else(|| of_steady(|o| Some(o.running? as f64)));
        let decode_queued =
            gauges::gauge_of(&steady_decode, decode_times, |d| Some(d.queue? as f64), on);
        let queue_from_decode = decode_queued.is_some();
        let queued = decode_queued.unwrap_or_else(|| of_steady(|o| Some(o.queue? as f64)));
        // like the running count: the decode lines' usage when they print one (a prefill
        // line's usage may be read before or after its batch joins, spec §2.2.1)
        let decode_usage = gauges::gauge_of(&steady_decode, decode_times, |d| d.usage, on);
        let usage = decode_usage.unwrap_or_else(|| of_steady(|o| o.usage));
        let gen_tps = gauges::rate_gauge_of(&steady_decode, decode_times, |d| d.gen_tps);
        // the share of the standing queue's readings above 0 (decode lines', else all)
        let queued_share = if queue_from_decode {
            share(&steady_decode, |d| d.queue.map(|q| q > 0))
        } else {
            share(&steady, |o| o.queue.map(|q| q > 0))
        };
        let full_share = share(&steady, |o| o.usage.map(|u| u >= th::KV_FULL_USAGE));
        // the KV pool's gauge is the decode lines' usage gauge: made once
        let pool_room = crate::evidence::pools::pool_room_with(
            &steady_decode,
            &steady_prefill,
            decode_usage.as_ref(),
        );
        Self {
            key,
            tl,
            span,
            obs,
            steady,
            steady_decode,
            steady_prefill,
            running,
            queued,
            usage,
            gen_tps,
            queued_share,
            queue_from_decode,
            full_share,
            first_windows,
            steady_interval,
            pool_room,
            pinned_across_ranks: None,
            admission: AdmissionMemo::new(),
            prefill_limit: PrefillLimitMemo::new(),
        }
    }

    /// Requests wait on most lines: the queued share is at least [`th::QUEUED_SHARE`].
    pub fn queued(&self) -> bool {
        self.queued_share.is_some_and(|s| s >= th::QUEUED_SHARE)
    }

    /// The KV pool is full: its p90 token usage (else its peak) reaches [`th::KV_FULL_USAGE`],
    /// or at least [`th::FULL_SHARE`] of the steady lines do.
    pub fn kv_full(&self) -> bool {
        self.usage
            .p90
            .or(self.usage.max)
            .is_some_and(|u| u >= th::KV_FULL_USAGE)
            || self.full_share.is_some_and(|s| s >= th::FULL_SHARE)
    }

    /// Median of `token usage / #running-req` over the steady decode lines that print both
    /// with at least one request running (else over every steady batch line): the fraction of
    /// the pool per request.
    pub fn usage_per_request(&self) -> Option<f64> {
        // a prefill line's running count is the batch before its new requests join, while its
        // usage may hold them (`log_prefill_stats`): the decode lines, when there are any
        let from_decode: Vec<f64> = self
            .steady_decode
            .iter()
            .filter_map(|d| Some(d.usage? / d.running.filter(|&r| r > 0)? as f64))
            .collect();
        let per: Vec<f64> = if from_decode.is_empty() {
            self.steady
                .iter()
                .filter_map(|o| Some(o.usage? / o.running.filter(|&r| r > 0)? as f64))
                .collect()
        } else {
            from_decode
        };
        throughput_stats::nth_in_total_order(per.iter().copied(), per.len() / 2)
    }

    /// The pool share the longer running requests hold, for a headroom figure: the
    /// [`th::LONG_REQUEST_QUANTILE`] quantile (nearest rank) over the steady decode lines of
    /// `#token / #running-req / pool` when the pool's size is known (`pool_tokens`, tokens;
    /// `#token` is exact where `token usage` rounds to two decimals) and the line's usage agrees
    /// with it, else of `token usage / #running-req` (fraction of the pool per request). A high
    /// quantile, not the median: a request holds more KV the longer it decodes, so room counted
    /// at today's median request overstates how many more fit.
    pub fn pool_per_long_request(&self, pool_tokens: Option<u64>) -> Option<f64> {
        let per: Vec<f64> = self
            .steady_decode
            .iter()
            .filter_map(|d| {
                let r = d.running.filter(|&r| r > 0)? as f64;
                // `#token` over the pool where the line's own usage agrees with it (to its
                // two decimals): a hybrid model's `#token` may count another pool
                match (d.tokens, pool_tokens.filter(|&p| p > 0), d.usage) {
                    (Some(t), Some(p), Some(u))
                        if (t as f64 / p as f64 - u).abs() <= th::USAGE_ROUNDING =>
                    {
                        Some(t as f64 / r / p as f64)
                    }
                    _ => Some(d.usage? / r),
                }
            })
            .collect();
        let i = ((per.len() as f64 * th::LONG_REQUEST_QUANTILE).ceil() as usize)
            .clamp(1, per.len().max(1))
            - 1;
        throughput_stats::nth_in_total_order(per.iter().copied(), i).filter(|&u| u > 0.0)
    }

    /// The mamba state slots one running request holds (fraction of the slots per request):
    /// the median of `mamba usage / #running-req` over the steady decode lines.
    pub fn mamba_per_request(&self) -> Option<f64> {
        let per: Vec<f64> = self
            .steady_decode
            .iter()
            .filter_map(|d| Some(d.mamba_usage? / d.running.filter(|&r| r > 0)? as f64))
            .collect();
        throughput_stats::median_f64(&per).filter(|&u| u > 0.0)
    }

    /// Whether this scheduler is a PD prefill node: it decodes nothing and its steady prefill
    /// lines print `#inflight-req` or `#prealloc-req` (SGLang `disaggregation/prefill.py`'s
    /// queues), as many as [`th::pd_role_holds`] asks.
    pub fn is_pd_prefill(&self) -> bool {
        // a PD prefill server prints its PD queues (`#inflight-req`, or the older
        // `#prealloc-req`) on every prefill line and decodes nothing
        let pd = self
            .steady_prefill
            .iter()
            .filter(|p| p.inflight_req.is_some() || p.prealloc_req.is_some())
            .count() as u64;
        self.tl.decode.pushed() == 0 && th::pd_role_holds(pd, self.steady_prefill.len() as u64)
    }

    /// Whether this scheduler is a PD decode node: its steady decode lines print
    /// `#transfer-req` (SGLang `disaggregation/decode.py`'s transfer queue), as many as
    /// [`th::pd_role_holds`] asks.
    pub fn is_pd_decode(&self) -> bool {
        // a PD decode server prints `#transfer-req` on every decode line: one line among many
        // is damage or a pasted line, not a role (issue 30 A3)
        let pd = self
            .steady_decode
            .iter()
            .filter(|d| d.transfer_req.is_some())
            .count() as u64;
        th::pd_role_holds(pd, self.steady_decode.len() as u64)
    }

    /// Median token usage over the steady span, else the peak (fraction).
    pub fn median_usage(&self) -> Option<f64> {
        self.usage.median.or(self.usage.max)
    }
}

/// The running count every steady decode line of every scheduler shows, when there are at
/// least [`th::MIN_PINNED_LINES`] such lines, the count is at least 2, and a request waits on
/// one of them: the running cap (per DP rank) the log does not print.
pub fn pinned(views: &[SchedulerView<'_>]) -> Option<u64> {
    let lines = || views.iter().flat_map(|v| v.steady_decode.iter());
    let first = lines().find_map(|d| d.running)?;
    let n = lines().filter(|d| d.running.is_some()).count();
    (first >= 2
        && n >= th::MIN_PINNED_LINES
        && lines().all(|d| d.running.is_none_or(|r| r == first))
        && lines().any(|d| d.queue.is_some_and(|q| q > 0)))
    .then_some(first)
}

/// One view per scheduler of `ev`, in key order.
pub fn views(ev: &Evidence) -> Vec<SchedulerView<'_>> {
    let mut views: Vec<SchedulerView<'_>> = ev
        .schedulers
        .iter()
        .map(|(k, tl)| SchedulerView::new(*k, tl))
        .collect();
    let pinned = pinned(&views);
    for v in &mut views {
        v.pinned_across_ranks = pinned;
    }
    views
}

/// The longest span of batch lines over the schedulers (seconds), the basis of rates per hour.
pub fn longest_span_s(views: &[SchedulerView<'_>]) -> Option<f64> {
    views
        .iter()
        .filter_map(|v| v.span.as_ref().map(|s| s.end_s - s.start_s))
        .reduce(f64::max)
}

/// The capacity facts of the log's startup lines, completed by its `server_args` and the
/// server info (in that order of preference).
pub fn capacity_summary(ev: &Evidence, ctx: &Context) -> CapacitySummary {
    let st = &ev.startup;
    let srv = ctx.server.as_ref();
    let arg_u64 = |k: &str| st.server_args.get(k).and_then(|v| v.parse::<u64>().ok());
    let stated = st
        .max_running_requests
        .or(st.max_running_reset)
        .or_else(|| arg_u64("max_running_requests"))
        .or_else(|| srv.and_then(|s| s.max_running_requests));
    let inferred = stated
        .is_none()
        .then(|| speculative_default_cap(ev))
        .flatten();
    CapacitySummary {
        max_total_num_tokens: st
            .max_total_num_tokens
            .map(|x| x.0)
            .or(st.swa_full_pool_tokens)
            .or(st.kv_alloc_tokens)
            .or_else(|| srv.and_then(|s| s.max_total_num_tokens)),
        max_running_requests: stated.or(inferred),
        max_running_inferred: inferred.is_some(),
        chunked_prefill_size: st
            .chunked_prefill_size
            .or_else(|| arg_u64("chunked_prefill_size"))
            .or_else(|| {
                srv.and_then(|s| s.chunked_prefill_size)
                    .and_then(|v| u64::try_from(v).ok())
            }),
        max_prefill_tokens: st
            .max_prefill_tokens
            .or_else(|| arg_u64("max_prefill_tokens")),
        prefill_max_requests: st.server_args.get("prefill_max_requests").and_then(|v| {
            match v.as_str() {
                "None" => Some(None),
                n => n.parse::<u64>().ok().map(Some),
            }
        }),
        context_len: st.context_len,
        mem_fraction_static: st
            .server_args
            .get("mem_fraction_static")
            .and_then(|v| v.parse().ok())
            .or_else(|| srv.and_then(|s| s.mem_fraction_static)),
        available_gpu_mem_gb: st.available_gpu_mem_gb.or(st.avail_mem_after_graph_gb),
        kv_cache_gb: st.kv_alloc_total_gb.or(st.kv_alloc_gb),
        weights_gb: st.weights_gb,
        swa_pool_tokens: st.swa_pool_tokens,
        mamba_cache_slots: st.mamba_cache_slots,
        chunked_prefill_off: st.chunked_prefill_off
            || st
                .server_args
                .get("chunked_prefill_size")
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v <= 0),
    }
}

/// SGLang's default `max_running_requests` with speculative decoding
/// ([`th::SPEC_DEFAULT_MAX_RUNNING`], `server_args.py`: "Max running requests is reset to 48
/// for speculative decoding") when nothing states a cap, every decode line prints `accept len`
/// or `accept rate`, and the highest running count of each scheduler is exactly that: on a
/// decode line, or after a prefill pass's requests join (`#running-req` + `#new-seq`: a prefill
/// line counts the running batch before its own requests, `scheduler.py`'s
/// `log_prefill_stats`). Not with DP attention
/// ranks beyond the first: the 48 is the server's, and SGLang divides it over the DP ranks
/// (`48 // dp_size` each), so a rank at 48 is at a cap set on purpose.
fn speculative_default_cap(ev: &Evidence) -> Option<u64> {
    if ev.schedulers.keys().any(|k| k.dp.is_some_and(|d| d > 0)) {
        return None;
    }
    let mut any = false;
    for tl in ev.schedulers.values() {
        let d = tl.decode.samples();
        if d.is_empty() {
            continue;
        }
        let after_pass = tl
            .prefill
            .samples()
            .iter()
            .filter_map(|p| Some(p.running? + p.new_seq.unwrap_or(0)));
        if d.iter()
            .any(|s| s.accept_len.is_none() && s.accept_rate.is_none())
            || d.iter().filter_map(|s| s.running).chain(after_pass).max()
                != Some(th::SPEC_DEFAULT_MAX_RUNNING)
        {
            return None;
        }
        any = true;
    }
    any.then_some(th::SPEC_DEFAULT_MAX_RUNNING)
}

/// The retraction totals, with events per hour over `span_s` (when at least a minute).
pub fn retraction_summary(ev: &Evidence, span_s: Option<f64>) -> RetractionSummary {
    let r = &ev.retraction_totals;
    RetractionSummary {
        events: r.events,
        lines: ev.retraction_lines,
        retracted_requests: r.retracted_reqs,
        tokens_freed: r.tokens_freed,
        per_hour: span_s
            .filter(|&s| s >= 60.0)
            .map(|s| r.events as f64 / (s / 3600.0)),
        max_ratio_after: r.max_ratio_after,
    }
}

/// Sum of steady gen throughput over schedulers (DP ranks add; TP duplicates were dropped):
/// each scheduler's time-weighted mean of the logged gen throughput with its batch-means
/// interval (`throughput_stats::gen_throughput_mean`), the variances added. No interval with
/// fewer than [`th::MIN_LINES_FOR_INTERVAL`] decode lines on some scheduler.
pub fn steady_throughput(views: &[SchedulerView<'_>]) -> Option<Rate> {
    let z = throughput_stats::z_value(th::CONFIDENCE).ok()?;
    let mut total = 0.0;
    let mut var = 0.0;
    let mut window = f64::INFINITY;
    let mut any = false;
    let mut fewest_points = usize::MAX;
    let mut fewest_lines = u32::MAX;
    // Ranks without a rate over time: (sum of their line means, fewest lines).
    let mut untimed = (0.0, u32::MAX);
    let mut steady_found = true;
    for a in views {
        let pts: Vec<(f64, f64)> = collect_within(
            a.steady_decode.len(),
            a.steady_decode
                .iter()
                .filter_map(|d| Some((d.t?, d.gen_tps?))),
        );
        let timed = (pts.len() >= 2 && is_sorted(&pts))
            .then(|| (pts[0].0, pts[pts.len() - 1].0))
            .filter(|(from, to)| to > from)
            .and_then(|(from, to)| {
                throughput_stats::gen_throughput_mean(&pts, from, to)
                    .ok()
                    .map(|e| (e, from, to))
            });
        let Some((est, from, to)) = timed else {
            // No time to weigh by (one line, lines within one clock tick, no timestamps):
            // each line's gen throughput is SGLang's own rate over its window; the first
            // window starts before the log, so it is used only when it is the only one.
            let vals: Vec<f64> = a.steady_decode.iter().filter_map(|d| d.gen_tps).collect();
            let used = if vals.len() > 1 {
                &vals[1..]
            } else {
                &vals[..]
            };
            if !used.is_empty() {
                untimed.0 += used.iter().sum::<f64>() / used.len() as f64;
                untimed.1 = untimed.1.min(u32::try_from(used.len()).unwrap_or(u32::MAX));
            }
            continue;
        };
        // Each value holds backward over its window: the first line's lies before `from`.
        fewest_lines = fewest_lines.min(u32::try_from(pts.len() - 1).unwrap_or(u32::MAX));
        total += est.mean;
        let half = (est.ci_high - est.ci_low) / 2.0;
        var += (half / z).powi(2);
        window = window.min(to - from);
        fewest_points = fewest_points.min(pts.len());
        steady_found &= a.span.as_ref().is_some_and(|s| s.basis.is_steady());
        any = true;
    }
    if !any {
        // Only lines without time between them: their own rates, as few samples.
        return (untimed.1 != u32::MAX).then(|| Rate {
            value: untimed.0,
            low: None,
            high: None,
            confidence: th::CONFIDENCE,
            unit: Unit::TokPerS,
            window_s: 0.0,
            basis: RateBasis::WholeLog,
            method: String::new(),
            lines: Some(untimed.1),
        });
    }
    let sd = var.sqrt();
    let interval = fewest_points >= th::MIN_LINES_FOR_INTERVAL && sd > 0.0;
    Some(Rate {
        value: total,
        low: interval.then(|| (total - z * sd).max(0.0)),
        high: interval.then_some(total + z * sd),
        confidence: th::CONFIDENCE,
        unit: Unit::TokPerS,
        window_s: window,
        basis: if steady_found {
            RateBasis::SteadySpan
        } else {
            RateBasis::WholeLog
        },
        method: String::new(),
        lines: Some(fewest_lines),
    })
}

#[cfg(test)]
mod tests {
    /// `whole` is `fract() == 0.0` on every kind of value.
    #[test]
    fn whole_is_a_zero_fraction() {
        let big = 9_223_372_036_854_775_808.0;
        for x in [
            0.0,
            -0.0,
            1.0,
            -3.0,
            0.5,
            -0.5,
            1_768_464_008.0,
            1_768_464_008.25,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            big,
            -big,
            big * 4.0,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ] {
            assert_eq!(super::whole(x), x.fract() == 0.0, "{x}");
        }
    }
}
