//! # `admission`: which admission limit holds back the requests that wait, step by step
//!
//! **What it detects.** For every steady step with requests waiting (a decode line with
//! `#queue-req` > 0, or on a PD decode server `#prealloc-req` > 0; a prefill line with a queue
//! when the scheduler prints no decode queue), how many of the waiting requests each of
//! SGLang's admission constraints holds back at that step:
//! - the running-request cap (configured, SGLang's default under speculative decoding, or the
//!   count every decode line of every rank is pinned at): it admits `cap - running` more, so
//!   it holds back `running + queued - cap` of them (none below the cap);
//! - the KV pool: `token usage` at [`th::KV_FULL_USAGE`] or more (SGLang holds back the rest
//!   for the running requests' future tokens, `new_token_ratio`, so a pool this full admits
//!   nothing new): all of them;
//! - the KV pool's reserve: `token usage` from [`th::CONSERVATIVE_USAGE`] up to the full mark:
//!   the free part is what `PrefillAdder` takes the running requests' reserve from
//!   (`min(max_new_tokens - output, CLIP_MAX_NEW_TOKENS) × new_token_ratio` each) before a
//!   new request's prompt and its own clipped `max_new_tokens` must fit, so long generations
//!   leave no room well below a full pool (SGLang's tuning guide reads a queue below 0.9 as
//!   this reserve); the log prints neither the ratio nor `max_new_tokens`, so this is read,
//!   not computed: all of them, never the verdict alone;
//! - the sliding-window pool of a hybrid SWA model: `swa token usage` at the same level: all;
//! - the mamba state slots of a hybrid SSM model: `mamba usage` at [`th::MAMBA_FULL_USAGE`]
//!   (the slots the running requests hold; no slot, no admission): all;
//! - the prefill token budget: the prefill pass that admitted requests since the previous
//!   step carried `#new-token` within [`th::PREFILL_AT_LIMIT_FRACTION`] of
//!   `min(chunked_prefill_size, max_prefill_tokens)` (the largest exactly repeated chunk when
//!   the log does not print them): what still waits after it, all of them;
//! - one request per prefill pass: on a scheduler whose passes all admit one request while
//!   the budget holds more (`prefill_limit`'s one-per-pass pattern: a build without batched
//!   prefill), a pass of one request holds back the rest of the queue.
//!
//! Each step is weighted by the time to the next one (one each when lines carry no time), so a
//! step's waiting requests stand for `queued × seconds` of *queued request-time*. Each
//! constraint gets the share of that it holds back (constraints may hold back the same
//! requests, so shares may sum above 1), with its median slack over the queued steps; what no
//! constraint the log shows holds back is *room everywhere*: those requests wait for
//! something else (a prefill that was not scheduled yet, a handshake, a grammar), not for
//! capacity.
//!
//! **Why it matters.** The verdict is the limit that holds the queue most of the time, said
//! with that share: a pool full on its 90th percentile may still have had room for most of the
//! time requests waited, and then more KV memory is the wrong lever.
//!
//! **Evidence it needs.** Steady batch lines with `#queue-req` and at least one of
//! `#running-req` (with a known cap), `token usage`, `swa token usage`, `mamba usage`, or
//! prefill lines with `#new-token`.
//!
//! **What to change.** The lever of the binding constraint: `--max-running-requests` (cap),
//! more KV slots (`mem_fraction_static`, `--kv-cache-dtype`, more GPUs) for a pool, the mamba
//! cache size, `--chunked-prefill-size` for the budget, a build or setting that batches
//! prefill for one request per pass; nothing of capacity when there is room everywhere.
//!
//! **Source.** SGLang `scheduler.py` (`get_new_batch_prefill`: no admission at
//! `max_running_requests`, `get_num_allocatable_reqs`), `schedule_policy.py` (`PrefillAdder`:
//! `rem_total_tokens` with the running requests' reserve, `rem_chunk_tokens`,
//! `rem_input_tokens`; every allocator, SWA and mamba included, checked per request).

use crate::evidence::DecodeSample;
use crate::evidence::view::SchedulerView;
pub use crate::report::{Admission, Binding, Constraint, Slack};
use crate::report::{CapacitySummary, Figure, Unit};
use crate::rules::on_rank;
use crate::thresholds as th;

mod tally;
#[cfg(test)]
use tally::weights;
use tally::{Clock, Step, Tally};

/// The constraint holding back the largest share of the queued request-time, when it holds
/// back at least [`th::ADMISSION_BINDING_SHARE`] of it and more than room everywhere; ties go
/// to the pools (raising the cap into a full pool only brings retractions).
pub fn binding(a: &Admission) -> Option<Binding> {
    a.bindings
        .iter()
        .copied()
        .filter(|b| b.share >= th::ADMISSION_BINDING_SHARE && b.share > a.room_everywhere)
        .max_by(|x, y| {
            x.share
                .total_cmp(&y.share)
                .then(order(y.constraint).cmp(&order(x.constraint)))
        })
}

/// The binding constraint when it is decisive: requests wait on most steady lines
/// ([`SchedulerView::queued`]) and it holds back at least [`th::ADMISSION_DECISIVE_SHARE`] of
/// the queued request-time.
pub fn decisive(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<Binding> {
    if !v.queued() {
        return None;
    }
    binding(&model(v, cap)?).filter(|b| b.share >= th::ADMISSION_DECISIVE_SHARE)
}

/// The share of the queued request-time one constraint holds back (0 when it was not judged).
pub fn share_of(a: &Admission, c: Constraint) -> f64 {
    a.bindings
        .iter()
        .find(|b| b.constraint == c)
        .map_or(0.0, |b| b.share)
}

/// Tie-break order (lower first): the pools before the cap before the budget.
fn order(c: Constraint) -> u8 {
    match c {
        Constraint::KvPool => 0,
        Constraint::SwaPool => 1,
        Constraint::MambaSlots => 2,
        Constraint::RunningCap => 3,
        Constraint::KvReserve => 4,
        Constraint::PrefillBudget => 5,
        Constraint::OnePerPass => 6,
    }
}

/// The admission model of one scheduler (see the module doc); `None` when no steady step has
/// requests waiting. Made once per view: asked again with the same capacity, the view's copy.
pub fn model(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<Admission> {
    if let Some((c, pinned, a)) = v.admission.get()
        && c == cap
        && *pinned == v.pinned_across_ranks
    {
        return a.clone();
    }
    let a = model_of(v, cap);
    // the first capacity asked is kept (the pipeline asks with one capacity only)
    let _ = v
        .admission
        .set((cap.clone(), v.pinned_across_ranks, a.clone()));
    a
}

fn model_of(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<Admission> {
    let (first, timed) = sums(v, cap, u8::MAX)?;
    match first.admission(timed) {
        Ok(a) => a,
        // a constraint read on some steps covers too few of them to count: the steps summed
        // again with those that cover (rare: a pool or cap printed on few lines)
        Err(covering) => {
            let (again, timed) = sums(v, cap, covering)?;
            again.admission(timed).ok().flatten()
        }
    }
}

/// The sums over the steps of scheduler `v` with the capacity `cap` (the room everywhere with
/// the constraints `covering` takes to cover them), and whether every step has its time; `None`
/// when no step has requests waiting.
fn sums(v: &SchedulerView<'_>, cap: &CapacitySummary, covering: u8) -> Option<(Tally, bool)> {
    let waits = |d: &DecodeSample| d.queue.unwrap_or(0) > 0 || d.prealloc_req.unwrap_or(0) > 0;
    let ds = &v.steady_decode;
    let decode_queue = ds
        .iter()
        .any(|d| d.queue.is_some() || d.prealloc_req.is_some());
    // the sums are made for a first step with requests waiting: none, no model to make (the
    // sums a local, not an option asked at every step)
    if decode_queue {
        let first = ds.iter().position(waits)?;
        let mut tally = Tally::new(v, cap, ds.len() - first, covering);
        let (clock, timed) = Clock::of(ds.iter().map(|d| d.t), v.steady_interval);
        let mut prefill = v.steady_prefill.iter().peekable();
        for (i, d) in ds.iter().enumerate() {
            // the prefill passes printed since the previous decode line
            let mut passed: Option<u64> = None;
            let mut seqs: Option<u64> = None;
            while let Some(p) = prefill.next_if(|p| (p.source, p.line) < (d.source, d.line)) {
                passed = passed.max(p.new_token);
                if let Some(n) = p.new_seq {
                    seqs = Some(seqs.unwrap_or(0) + n);
                }
            }
            if waits(d) {
                let weight = clock.weight(d.t, ds.get(i + 1).map(|n| n.t));
                tally.add(Step {
                    weight,
                    queue: d.queue.unwrap_or(0) + d.prealloc_req.unwrap_or(0),
                    running: d.running,
                    usage: d.usage,
                    swa: d.swa_usage,
                    mamba: d.mamba_usage,
                    prefill_tokens: passed,
                    prefill_seqs: seqs,
                });
            }
        }
        return Some((tally, timed));
    }
    let ps = &v.steady_prefill;
    let first = ps.iter().position(|p| p.queue.unwrap_or(0) > 0)?;
    let mut tally = Tally::new(v, cap, ps.len() - first, covering);
    let (clock, timed) = Clock::of(ps.iter().map(|p| p.t), None);
    for (i, p) in ps.iter().enumerate().skip(first) {
        if p.queue.unwrap_or(0) == 0 {
            continue;
        }
        let weight = clock.weight(p.t, ps.get(i + 1).map(|n| n.t));
        tally.add(Step {
            weight,
            queue: p.queue.unwrap_or(0),
            // a prefill line counts the running batch before its own requests join
            running: p.running.map(|r| r + p.new_seq.unwrap_or(0)),
            usage: p.usage,
            swa: None,
            mamba: p.mamba_usage,
            prefill_tokens: p.new_token,
            prefill_seqs: p.new_seq,
        });
    }
    Some((tally, timed))
}

/// The admission model's figures on the finding of the verdict of scheduler `v`: the share of
/// the queued request-time each constraint held back (those that held some), and the share with
/// room in every limit read; none when the model has no queued time to read.
pub(crate) fn figures(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Vec<Figure> {
    let mut figures = Vec::new();
    // the admission model: which limit held the waiting requests back, for how much of the time
    if let Some(a) = model(v, cap) {
        for b in a.bindings.iter().filter(|b| b.share > 0.0) {
            figures.push(Figure::new(
                on_rank(
                    v,
                    &format!(
                        "share of the queued request-time held back by {}",
                        words(b.constraint)
                    ),
                ),
                b.share,
                Unit::Fraction,
            ));
        }
        figures.push(Figure::new(
            on_rank(
                v,
                "share of the queued request-time with room in every limit read",
            ),
            a.room_everywhere,
            Unit::Fraction,
        ));
    }
    figures
}

/// An admission constraint, as the figures name it.
fn words(c: Constraint) -> &'static str {
    match c {
        Constraint::RunningCap => "the running-request cap",
        Constraint::KvPool => "the KV pool",
        Constraint::KvReserve => {
            "the KV pool's reserve for the running requests (token usage high, below the full mark)"
        }
        Constraint::SwaPool => "the SWA pool",
        Constraint::MambaSlots => "the mamba state slots",
        Constraint::PrefillBudget => "the prefill token budget",
        Constraint::OnePerPass => "one request per prefill pass",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, only, set_field, whole, with_input};
    use crate::verdict::{self, Reason};

    const QUEUE12K: &str = "real/001-i938-a100-llama13b-queue12k.log";
    const MAXRUN2: &str = "real-long/ascend-dsr1-pd-decode-maxrun2-queued.log";
    const CHUNKS: &str = "real/041-i11970-v0.5.3post3-prefill-queue114-chunk8192.log";
    const MAMBA: &str = "real-3/015-pr30047-npu-mamba-prefill-queue97-pending-token.log";
    const INTERVAL: &str = "real/059-npu-doc-forward-iteration-numbers-prefill-decode-interval.log";
    const DP_ATTN: &str =
        "real-4/121-npu-2node-qwen3-480b-dp-attn-chunk256-prefill-bound-cap24-graph-off.log";

    fn model_of(lines: &str, cap: &CapacitySummary) -> Option<Admission> {
        with_input(lines, |i| model(&i.views[0], cap))
    }

    fn with_cap(n: u64) -> CapacitySummary {
        CapacitySummary {
            max_running_requests: Some(n),
            ..CapacitySummary::default()
        }
    }

    fn dp1() -> String {
        only(&whole(MAXRUN2), "DP1 TP2")
    }

    #[test]
    fn a_full_kv_pool_holds_the_whole_queue() {
        // 001: token usage 0.93 with 12,279 waiting: the pool admits nothing new
        let a = model_of(&whole(QUEUE12K), &CapacitySummary::default()).unwrap();
        let b = binding(&a).unwrap();
        assert_eq!(b.constraint, Constraint::KvPool);
        assert_eq!(b.share, 1.0);
        assert!(matches!(b.slack, Slack::Fraction(f) if (f - 0.07).abs() < 1e-9));
        assert_eq!(a.room_everywhere, 0.0);
    }

    #[test]
    fn the_pool_binds_from_the_full_mark_on() {
        // the same line at 0.90 (the mark) binds as a full pool, not as its reserve
        let lines = whole(QUEUE12K);
        let at = model_of(
            &set_field(&lines, "token usage", "0.90"),
            &CapacitySummary::default(),
        )
        .unwrap();
        assert_eq!(share_of(&at, Constraint::KvPool), 1.0);
        assert_eq!(share_of(&at, Constraint::KvReserve), 0.0);
        // at 0.89 the pool is below the full mark, but the reserve SGLang keeps for the
        // running requests' remaining tokens still holds the queue
        let below = model_of(
            &set_field(&lines, "token usage", "0.89"),
            &CapacitySummary::default(),
        )
        .unwrap();
        assert_eq!(share_of(&below, Constraint::KvPool), 0.0);
        assert_eq!(share_of(&below, Constraint::KvReserve), 1.0);
        assert_eq!(below.room_everywhere, 0.0);
        assert_eq!(
            binding(&below).map(|b| b.constraint),
            Some(Constraint::KvReserve)
        );
    }

    #[test]
    fn the_reserve_binds_from_the_conservative_mark_on() {
        // 001's lines at 0.80 (the mark below which a queue is the scheduler holding back):
        // the reserve; at 0.79 nothing the log shows holds the queue
        let lines = whole(QUEUE12K);
        let at = model_of(
            &set_field(&lines, "token usage", "0.80"),
            &CapacitySummary::default(),
        )
        .unwrap();
        assert_eq!(share_of(&at, Constraint::KvReserve), 1.0);
        assert!(matches!(
            at.bindings.iter().find(|b| b.constraint == Constraint::KvReserve).map(|b| b.slack),
            Some(Slack::Fraction(f)) if (f - 0.2).abs() < 1e-9
        ));
        let below = model_of(
            &set_field(&lines, "token usage", "0.79"),
            &CapacitySummary::default(),
        )
        .unwrap();
        assert_eq!(share_of(&below, Constraint::KvReserve), 0.0);
        assert_eq!(below.room_everywhere, 1.0);
        assert_eq!(binding(&below), None);
    }

    #[test]
    fn nothing_waits_nothing_to_model() {
        let lines = set_field(&whole(QUEUE12K), "#queue-req", "0");
        assert_eq!(model_of(&lines, &CapacitySummary::default()), None);
    }

    #[test]
    fn the_cap_holds_every_request_above_it() {
        // a PD decode rank at max_running_requests 2 with 7-22 waiting; its pool never at the
        // full mark (two long requests hold up to 0.87 of it)
        let a = model_of(&dp1(), &with_cap(2)).unwrap();
        let b = binding(&a).unwrap();
        assert_eq!(b.constraint, Constraint::RunningCap);
        assert_eq!(b.share, 1.0);
        assert_eq!(b.slack, Slack::Requests(0.0));
        assert_eq!(share_of(&a, Constraint::KvPool), 0.0);
        assert_eq!(a.cap, Some(2));
        // far above the running count: every waiting request had room under the cap; what
        // held them then is the pool's reserve on the steps at 0.80-0.89, nothing else
        let wide = model_of(&dp1(), &with_cap(100)).unwrap();
        assert_eq!(share_of(&wide, Constraint::RunningCap), 0.0);
        let reserve = share_of(&wide, Constraint::KvReserve);
        assert!(reserve > 0.1 && reserve < 0.5, "{wide:?}");
        assert!(
            (wide.room_everywhere - (1.0 - reserve)).abs() < 1e-9,
            "{wide:?}"
        );
    }

    #[test]
    fn a_pool_read_on_few_steps_holds_nothing_back() {
        // DP1 under a cap far above its running count, `token usage` left on one line in ten
        // only (in the reserve's range): the pool covers too few steps to count, so its reserve
        // holds nothing back and every waiting request had room (the steps are summed again
        // without it after a first sum that took it)
        let lines: String = dp1()
            .lines()
            .enumerate()
            .map(|(i, l)| match l.find("token usage: ") {
                Some(_) if i % 10 == 0 => set_field(l, "token usage", "0.85"),
                Some(at) => {
                    let end = l[at..].find(", ").map_or(l.len(), |e| at + e + 2);
                    format!("{}{}\n", &l[..at], &l[end..])
                }
                None => format!("{l}\n"),
            })
            .collect();
        let a = model_of(&lines, &with_cap(100)).unwrap();
        assert!(
            a.bindings
                .iter()
                .all(|b| !matches!(b.constraint, Constraint::KvPool | Constraint::KvReserve)),
            "{a:?}"
        );
        assert_eq!(a.room_everywhere, 1.0, "{a:?}");
        // the same lines with every other line's usage below the reserve: the pool covers, and
        // its reserve holds back the requests of the steps in its range
        let low: String = dp1()
            .lines()
            .enumerate()
            .map(|(i, l)| set_field(l, "token usage", if i % 10 == 0 { "0.85" } else { "0.10" }))
            .collect();
        let a = model_of(&low, &with_cap(100)).unwrap();
        let reserve = share_of(&a, Constraint::KvReserve);
        assert!(reserve > 0.0 && reserve < 0.5, "{a:?}");
        assert!((a.room_everywhere - (1.0 - reserve)).abs() < 1e-9, "{a:?}");
    }

    #[test]
    fn a_cap_with_room_for_some_holds_only_the_rest() {
        // 121 DP1: cap 24; on one line 23 run and 1 waits, so the cap admits it: that step's
        // request is not held by the cap
        let a = with_input(&whole(DP_ATTN), |i| {
            let v = i.views.iter().find(|v| v.key.to_string() == "DP1").unwrap();
            model(v, i.capacity)
        })
        .unwrap();
        assert_eq!(a.cap, Some(24));
        let cap = share_of(&a, Constraint::RunningCap);
        assert!(cap > 0.9 && cap < 1.0, "{a:?}");
        assert!((a.room_everywhere - (1.0 - cap)).abs() < 1e-9, "{a:?}");
    }

    #[test]
    fn full_mamba_slots_hold_the_queue() {
        // 015 (hybrid SSM, prefill lines only): mamba usage 0.20-0.60 leaves slots free; the
        // same lines at 1.00 hold every waiting request, ahead of the budget the passes fill
        let lines = whole(MAMBA);
        let free = model_of(&lines, &CapacitySummary::default()).unwrap();
        assert_eq!(share_of(&free, Constraint::MambaSlots), 0.0);
        assert_eq!(
            binding(&free).unwrap().constraint,
            Constraint::PrefillBudget
        );
        let full = model_of(
            &set_field(&lines, "mamba usage", "1.00"),
            &CapacitySummary::default(),
        )
        .unwrap();
        assert_eq!(binding(&full).unwrap().constraint, Constraint::MambaSlots);
        let near = set_field(&lines, "mamba usage", "0.98");
        let near = model_of(&near, &CapacitySummary::default()).unwrap();
        assert_eq!(share_of(&near, Constraint::MambaSlots), 0.0);
    }

    #[test]
    fn full_mamba_slots_name_the_verdict_with_their_share_of_decode_lines() {
        // 009's decode line (40 running, mamba usage 0.80) made full, with 5 waiting: the slots
        // hold back every waiting request, and the verdict's figure is the share of steady
        // decode lines with full slots (the unit `running_cap::Limit::MambaSlots` carries)
        let lines = set_field(
            &set_field(
                &whole("real-3/009-pr30047-npu-mamba-usage-accept-len.log"),
                "mamba usage",
                "1.00",
            ),
            "#queue-req",
            "5",
        );
        with_input(&lines, |i| {
            let v = &i.views[0];
            let b = decisive(v, &CapacitySummary::default()).expect("decisive");
            assert_eq!((b.constraint, b.share), (Constraint::MambaSlots, 1.0));
            let decode_share = crate::evidence::view::share(&v.steady_decode, |d| {
                d.mamba_usage.map(|m| m >= th::MAMBA_FULL_USAGE)
            });
            match verdict::classify(v, &CapacitySummary::default()) {
                Reason::RunningCap(crate::rules::running_cap::Limit::MambaSlots { share }) => {
                    assert_eq!(Some(share), decode_share)
                }
                other => panic!("{other:?}"),
            }
        });
    }

    #[test]
    fn the_swa_pool_binds_on_its_own_usage() {
        // 013 (hybrid SWA): the full-attention pool at 1.00 holds the queue while the SWA pool
        // reads 0.06; the same lines with the pools' usages swapped make the SWA pool the one
        let lines = whole("real/013-i26248-swa-retraction-collapse.log");
        let a = model_of(&lines, &CapacitySummary::default()).unwrap();
        assert_eq!(binding(&a).unwrap().constraint, Constraint::KvPool);
        assert_eq!(share_of(&a, Constraint::SwaPool), 0.0);
        let swapped = set_field(
            &set_field(&lines, "full token usage", "0.50"),
            "swa token usage",
            "0.95",
        );
        let a = model_of(&swapped, &CapacitySummary::default()).unwrap();
        assert_eq!(binding(&a).unwrap().constraint, Constraint::SwaPool);
        assert_eq!(share_of(&a, Constraint::KvPool), 0.0);
        // at 0.89 neither pool holds anything back
        let below = set_field(&swapped, "swa token usage", "0.89");
        let a = model_of(&below, &CapacitySummary::default()).unwrap();
        assert_eq!(a.room_everywhere, 1.0);
    }

    #[test]
    fn a_pass_at_the_chunk_size_holds_the_rest_of_the_queue() {
        // 041: every prefill pass carries 8192 tokens (the chunk) while 114 wait
        let lines = whole(CHUNKS);
        let a = model_of(&lines, &CapacitySummary::default()).unwrap();
        let b = binding(&a).unwrap();
        assert_eq!(b.constraint, Constraint::PrefillBudget);
        assert_eq!(b.share, 1.0);
        // passes of about half the configured chunk leave the budget room
        let cap = CapacitySummary {
            chunked_prefill_size: Some(8192),
            ..CapacitySummary::default()
        };
        let half = model_of(&set_field(&lines, "#new-token", "4000"), &cap).unwrap();
        assert_eq!(share_of(&half, Constraint::PrefillBudget), 0.0);
        assert_eq!(binding(&half), None);
    }

    #[test]
    fn one_request_a_pass_holds_the_rest_of_a_burst() {
        // 039 (EAGLE in v0.4.1, prefill_only_one_req): 63 requests at once, every pass admits
        // #new-seq 1 while the rest wait
        let lines = whole("real-3/039-i2777-eagle2-bench-cache-hit-rate-queue62.log");
        let a = model_of(&lines, &CapacitySummary::default()).unwrap();
        let b = binding(&a).unwrap();
        assert_eq!((b.constraint, b.share), (Constraint::OnePerPass, 1.0));
        assert_eq!(a.room_everywhere, 0.0);
        // passes of two requests: no one-per-pass pattern, so the constraint is not read
        let two = set_field(&lines, "#new-seq", "2");
        let a = model_of(&two, &CapacitySummary::default()).unwrap();
        assert!(
            a.bindings
                .iter()
                .all(|b| b.constraint != Constraint::OnePerPass)
        );
        // passes of several requests filling a chunk (041) are the budget's, not this
        let a = model_of(&whole(CHUNKS), &CapacitySummary::default()).unwrap();
        assert_eq!(share_of(&a, Constraint::OnePerPass), 0.0);
    }

    #[test]
    fn requests_wait_with_room_in_every_limit() {
        // 059: an NPU build that runs prefill every N decode iterations; the pool nearly empty
        let a = model_of(&whole(INTERVAL), &CapacitySummary::default()).unwrap();
        assert_eq!(a.room_everywhere, 1.0);
        assert_eq!(binding(&a), None);
    }

    #[test]
    fn the_cap_is_the_verdict_when_the_pool_fills_only_while_nothing_waits() {
        // DP1 at cap 2, its lines with at most three waiting requests turned into full-pool lines
        // with none waiting: the pool's 90th percentile reads full, yet every request that
        // waited was held by the cap, with the pool below half
        let lines: String = dp1()
            .lines()
            .map(|l| {
                if ["0,", "1,", "2,", "3,"]
                    .iter()
                    .any(|q| l.contains(&format!("#queue-req: {q}")))
                {
                    let l = set_field(l, "token usage", "0.95");
                    set_field(&l, "#queue-req", "0")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        with_input(&lines, |i| {
            let v = &i.views[0];
            assert!(
                v.kv_full() && v.queued(),
                "{:?} {:?} {:?}",
                v.usage,
                v.queued_share,
                v.full_share
            );
            let old_first = crate::rules::kv_cache_bound::queued_at_full_pool(v);
            assert!(
                old_first.is_some(),
                "the pool rule alone would name the KV cache"
            );
            let a = model(v, &with_cap(2)).unwrap();
            assert_eq!(share_of(&a, Constraint::KvPool), 0.0);
            assert!(matches!(
                verdict::classify(v, &with_cap(2)),
                Reason::RunningCap(crate::rules::running_cap::Limit::Configured { cap: 2, .. })
            ));
        });
        // the lines as logged, with the pool full on every line too: the pool first
        let full = set_field(&dp1(), "token usage", "0.95");
        with_input(&full, |i| {
            let b = decisive(&i.views[0], &with_cap(2)).unwrap();
            assert_eq!(b.constraint, Constraint::KvPool);
            assert!(matches!(
                verdict::classify(&i.views[0], &with_cap(2)),
                Reason::KvCache(_)
            ));
        });
    }

    #[test]
    fn steps_are_weighted_by_their_time() {
        // the first lines of DP1, 8 s then 4 s then 2 s apart: the last step the median
        let d = excerpt(MAXRUN2, 2200..=2600);
        let times: Vec<Option<f64>> = with_input(&only(&d, "DP1 TP2"), |i| {
            i.views[0].steady_decode.iter().map(|d| d.t).collect()
        });
        let w = weights(&times, None);
        assert_eq!(w.len(), times.len());
        // the view's interval is the median the weights select
        let interval = with_input(&only(&d, "DP1 TP2"), |i| i.views[0].steady_interval);
        assert_eq!(weights(&times, interval), w);
        assert_eq!(&w[..3], &[8.0, 4.0, 2.0]);
        assert_eq!(weights(&[None, Some(1.0)], None), vec![1.0, 1.0]);
        // the model's clock reads the same weights, bit for bit, one at a time
        let clocked = |ts: &[Option<f64>], interval: Option<f64>| -> Vec<f64> {
            let (c, _) = Clock::of(ts.iter().copied(), interval);
            (0..ts.len())
                .map(|i| c.weight(ts[i], ts.get(i + 1).copied()))
                .collect()
        };
        assert_eq!(clocked(&times, None), w);
        assert_eq!(clocked(&times, interval), w);
        let odd: [&[Option<f64>]; 6] = [
            &[None, Some(1.0)],
            &[Some(2.0), Some(1.0), Some(3.0)],
            &[Some(1.0); 3],
            &[Some(5.0)],
            &[Some(1.0), Some(1.0), Some(4.0), Some(4.5)],
            &[Some(0.0), Some(f64::NAN), Some(2.0)],
        ];
        for ts in odd {
            assert_eq!(
                clocked(ts, None)
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
                weights(ts, None)
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
                "{ts:?}"
            );
        }
        assert!(!Clock::of([Some(1.0), None].into_iter(), None).1);
    }
}
