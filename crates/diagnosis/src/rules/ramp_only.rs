//! # `ramp_only`: the log holds only the start of a burst
//!
//! **What it detects.** From the queue's peak on (a few warm-up lines before it may be
//! skipped: at most [`th::RAMP_MAX_SKIPPED_SHARE`] of the lines, or
//! [`th::RAMP_MAX_SKIPPED_LINES`]), running requests climb by more than [`th::RAMP_MIN_RISE`]
//! and rarely fall ([`th::RAMP_RISING_SHARE`] of the steps) while the queue drains by more than
//! [`th::RAMP_MIN_RISE`], and at most half the lines sit at the final ceiling (a run that
//! reaches its ceiling early and stays there has a steady state). The log must end still
//! climbing: its last running count within [`th::RAMP_MIN_RISE`] of the highest, which is
//! below `max_running_requests`, and at least [`th::RAMP_LATER_RISE_SHARE`] of the whole climb
//! still in the later half of the lines (a batch that reached the cap, peaked and fell, or
//! levelled off is past its ramp: it held a plateau or drains).
//!
//! The same climb with nothing waiting on any line is the client's own ramp (requests admitted
//! as they arrive, `queued_start` and `queued_end` both 0): the steady load is not in the log
//! either.
//!
//! A climb during which more requests arrive than the queue loses is no burst's start: a
//! burst's queue drains only by admission (the prefill lines' `#new-seq` over the climb equal
//! its drop), while a client that keeps its load on (a closed loop at its concurrency, replacing
//! each request that completes) refills it. Such a log ends under full load (a client stopped
//! at its time limit, a log captured mid-run): [`Facts::under_load`], worded as such and never
//! as a ramp-up. Told only when every prefill line of the climb is kept (an unthinned
//! timeline).
//!
//! **Why it matters.** Rates measured over a ramp understate the steady rate, and the verdict
//! holds for the ramp only: the report must say that the steady state is not in the log.
//!
//! **Evidence it needs.** At least [`th::RAMP_MIN_LINES`] batch lines with `#running-req` and
//! `#queue-req` after the queue's peak.
//!
//! **What to change.** Capture a longer log.
//!
//! **Source.** Phases of a burst as MSER-5 sees them (White 1997); SGLang's admission fills the
//! batch one prefill pass at a time (`schedule_policy.py`).

use crate::evidence::SchedulerKey;
use crate::narrative::words::finding;
use crate::report::{Confidence, Figure, Finding, FindingKind, Ramp, SourceRange, Unit};
use crate::rules::{Input, Rule};
use crate::thresholds as th;

/// The ramp, on the first scheduler that shows one.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The scheduler.
    pub scheduler: SchedulerKey,
    /// Running and queued requests at the ramp's ends.
    pub ramp: Ramp,
    /// Its batch lines.
    pub evidence: Option<SourceRange>,
    /// Requests admitted over the climb (the prefill lines' `#new-seq`), and the climb's
    /// length (seconds), when every prefill line of it is kept.
    pub admitted: Option<(u64, f64)>,
}

impl Facts {
    /// Requests that arrived during the climb: admitted minus the queue's drop.
    pub fn arrived(&self) -> Option<u64> {
        let drop = self.ramp.queued_start.saturating_sub(self.ramp.queued_end);
        self.admitted.map(|(a, _)| a.saturating_sub(drop))
    }

    /// Whether the log ends under full load rather than in a burst's ramp-up: requests still
    /// wait on its last line (the server is full), and more requests arrived during the climb
    /// than the queue lost (and more than [`th::RAMP_MIN_RISE`]). A climb with nothing waiting
    /// is the client's own ramp, whatever arrives.
    pub fn under_load(&self) -> bool {
        let drop = self.ramp.queued_start.saturating_sub(self.ramp.queued_end);
        self.ramp.queued_end > 0
            && self
                .arrived()
                .is_some_and(|a| a > drop.max(th::RAMP_MIN_RISE))
    }
}

/// Requests admitted between log times `from` and `to` (the prefill lines' `#new-seq`) and
/// the span's length (seconds); `None` when the scheduler's prefill lines are thinned or
/// untimed, or chunked (two or more passes filled to the same largest size).
fn admitted_between(
    v: &crate::evidence::view::SchedulerView<'_>,
    from: f64,
    to: f64,
) -> Option<(u64, f64)> {
    if v.tl.prefill.stride() != 1 {
        return None;
    }
    let lines: Vec<_> =
        v.tl.prefill
            .samples()
            .iter()
            .filter(|p| p.t.is_some_and(|t| (from..=to).contains(&t)))
            .collect();
    // a chunked prompt's continuation is counted in `#new-seq` again on every pass
    // (`schedule_policy.py`: the chunked request is in `can_run_list`): passes filled to one
    // size are chunks, and their `#new-seq` no count of admitted requests
    let most = lines.iter().filter_map(|p| p.new_token).max();
    let at_most = lines
        .iter()
        .filter(|p| most.is_some() && p.new_token == most)
        .count();
    if at_most >= 2 {
        return None;
    }
    let n = lines.iter().map(|p| p.new_seq.unwrap_or(0)).sum();
    Some((n, to - from))
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    input.views.iter().find_map(|v| {
        let read = || {
            v.obs
                .iter()
                .filter_map(|o| Some((o.t, o.running?, o.queue?)))
        };
        // the first line of the longest queue, and how many lines read both counts, before
        // anything is copied: a log whose queue peaks late is no ramp
        let (mut peak, mut n, mut top_queue) = (0, 0, None);
        for (i, (_, _, q)) in read().enumerate() {
            if top_queue.is_none_or(|m| q > m) {
                (peak, top_queue) = (i, Some(q));
            }
            n += 1;
        }
        let max_skip =
            ((n as f64 * th::RAMP_MAX_SKIPPED_SHARE) as usize).max(th::RAMP_MAX_SKIPPED_LINES);
        if peak > max_skip {
            return None;
        }
        // the lines from the peak on, read once: no copy of them
        let len = n - peak;
        if len < th::RAMP_MIN_LINES {
            return None;
        }
        let mut from_peak = read().skip(peak);
        let (t0, r0, q0) = from_peak.next()?;
        let (mut t1, mut r1, mut q1) = (t0, r0, q0);
        // `arriving`: requests admitted as they arrive, nothing ever waits (the client's own
        // ramp)
        let (mut non_falling, mut arriving) = (0, q0 == 0);
        let (mut top, mut on_plateau) = (r0, 1);
        // the first running count of the later half (`len / 2` lines on)
        let mut later_first = if len / 2 == 0 { r0 } else { 0 };
        // a fall that leaves too few lines to rise on in the end settles it: no ramp (on a
        // serving log's wavering batch, well before its last line: ramp_only 1.23 M -> ~0.7 M
        // instructions on the 20 MB sample)
        let mut falls = 0usize;
        for (j, (t, r, q)) in from_peak.enumerate().map(|(j, x)| (j + 1, x)) {
            if r < r1 {
                falls += 1;
                if ((len - 1 - falls) as f64) < th::RAMP_RISING_SHARE * (len - 1) as f64 {
                    return None;
                }
            }
            non_falling += usize::from(r >= r1);
            arriving &= q == 0;
            if r > top {
                (top, on_plateau) = (r, 1);
            } else if r == top {
                on_plateau += 1;
            }
            if j == len / 2 {
                later_first = r;
            }
            (t1, r1, q1) = (t, r, q);
        }
        let rising = r1 > r0 + th::RAMP_MIN_RISE
            && non_falling as f64 >= th::RAMP_RISING_SHARE * (len - 1) as f64;
        let draining = q1 + th::RAMP_MIN_RISE < q0;
        // past the ramp: the batch reached the cap, or peaked and fell back
        let reached_cap = input
            .capacity
            .max_running_requests
            .is_some_and(|cap| top >= cap);
        // a ramp still climbs in its later half; a batch that levels off there has a plateau
        let later_rise = r1 as f64 - later_first as f64;
        let still_rising = r1 + th::RAMP_MIN_RISE >= top
            && later_rise > 0.0
            && later_rise >= th::RAMP_LATER_RISE_SHARE * r1.saturating_sub(r0) as f64;
        (rising && (draining || arriving) && on_plateau * 2 <= len && still_rising && !reached_cap)
            .then(|| Facts {
                scheduler: v.key,
                ramp: Ramp {
                    running_start: r0,
                    running_end: r1,
                    queued_start: q0,
                    queued_end: q1,
                },
                evidence: input.timeline_range(v.tl).map(|mut r| {
                    r.source = input.source_name(input.source_of(v.tl));
                    r
                }),
                admitted: match (t0, t1) {
                    (Some(from), Some(to)) if to > from => admitted_between(v, from, to),
                    _ => None,
                },
            })
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct RampOnly;

impl Rule for RampOnly {
    const NAME: &'static str = "ramp_only";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let r = &f.ramp;
        if let (true, Some((admitted, span)), Some(arrived)) =
            (f.under_load(), f.admitted, f.arrived())
        {
            return finding(
                FindingKind::EndsUnderLoad,
                "The log ends under full load",
                format!(
                    "On {}, running requests climb from {} to {} while the queue falls from {} to {}, but {arrived} requests arrived over those {span:.0} s ({admitted} admitted): a client kept its load on to the log's last line (a client stopped at its time limit, or a log captured mid-run), not the start of a burst. The steady figures hold for that load; the run's drain is not in the log.",
                    f.scheduler, r.running_start, r.running_end, r.queued_start, r.queued_end
                ),
                vec![
                    Figure::new(
                        "requests admitted over the climb",
                        admitted as f64,
                        Unit::Requests,
                    ),
                    Figure::new(
                        "requests that arrived over the climb",
                        arrived as f64,
                        Unit::Requests,
                    ),
                    Figure::new("the climb's length", span, Unit::Seconds),
                    Figure::new(
                        "running requests at end",
                        r.running_end as f64,
                        Unit::Requests,
                    ),
                    Figure::new(
                        "queued requests at end",
                        r.queued_end as f64,
                        Unit::Requests,
                    ),
                ],
                f.evidence.clone().into_iter().collect(),
                Confidence::Medium,
            );
        }
        finding(
            FindingKind::RampOnly,
            "The log shows only the ramp-up",
            if r.queued_start == 0 && r.queued_end == 0 {
                format!(
                    "On {}, running requests climb from {} to {} while nothing waits: requests are admitted as they arrive, the client is still ramping up, and the steady load is not in this excerpt. Rates measured here understate the steady rate; capture a longer log.",
                    f.scheduler, r.running_start, r.running_end
                )
            } else {
                format!(
                    "On {}, running requests climb from {} to {} while the queue drains from {} to {}: this excerpt is the start of a burst, not a steady state. Rates measured here understate the steady rate; capture a longer log.",
                    f.scheduler, r.running_start, r.running_end, r.queued_start, r.queued_end
                )
            },
            vec![
                Figure::new(
                    "running requests at start",
                    r.running_start as f64,
                    Unit::Requests,
                ),
                Figure::new(
                    "running requests at end",
                    r.running_end as f64,
                    Unit::Requests,
                ),
                Figure::new(
                    "queued requests at start",
                    r.queued_start as f64,
                    Unit::Requests,
                ),
                Figure::new(
                    "queued requests at end",
                    r.queued_end as f64,
                    Unit::Requests,
                ),
            ],
            f.evidence.clone().into_iter().collect(),
            Confidence::Medium,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, excerpt, set_field, whole, with_input};

    const BURST: &str = "real/035-pr13023-prefill-burst-with-benchmark-marker.log";
    const CHUNKS: &str = "real/041-i11970-v0.5.3post3-prefill-queue114-chunk8192.log";

    #[test]
    fn a_burst_after_a_warm_up() {
        with_input(&whole(BURST), |i| {
            let f = check(i).expect("ramp");
            assert_eq!(
                f.ramp,
                Ramp {
                    running_start: 4,
                    running_end: 74,
                    queued_start: 186,
                    queued_end: 120
                }
            );
        });
        with_input(&whole(CHUNKS), |i| {
            assert_eq!(check(i).map(|f| f.ramp.running_end), Some(64));
        });
    }

    #[test]
    fn a_flat_run_is_no_ramp() {
        with_input(&set_field(&whole(CHUNKS), "#running-req", "40"), |i| {
            assert_eq!(check(i), None)
        });
    }

    const CAP24: &str =
        "real-4/121-npu-2node-qwen3-480b-dp-attn-chunk256-prefill-bound-cap24-graph-off.log";

    #[test]
    fn a_batch_that_reached_its_cap_and_fell_back_is_past_its_ramp() {
        // 121: DP0 climbs from 0 while 31 wait, holds max_running_requests=24 (line 7) with
        // 8-9 queued, and ends at 17 running with nothing queued: ramp, plateau and drain.
        with_input(&whole(CAP24), |i| assert_eq!(check(i), None));
    }

    #[test]
    fn a_climb_that_stops_short_of_the_cap_and_ends_at_its_top_is_a_ramp() {
        // 035 with the cap line of 121 in front: 74 running is below a cap of 256, and the log
        // ends at its highest running count: still a ramp. At a cap of 74 it is not.
        let cap = |n: u32| {
            format!(
                "[2026-01-17 10:35:59] max_total_num_tokens=156800, chunked_prefill_size=256, max_prefill_tokens=458880, max_running_requests={n}, context_len=8192, available_gpu_mem=9.10 GB\n{}",
                whole(BURST)
            )
        };
        with_input(&cap(256), |i| {
            assert_eq!(check(i).map(|f| f.ramp.running_end), Some(74))
        });
        with_input(&cap(74), |i| assert_eq!(check(i), None));
    }

    const MAMBA_RAMP: &str = "real-3/009-pr30047-npu-mamba-usage-accept-len.log";

    #[test]
    fn a_climb_with_nothing_waiting_is_the_clients_ramp() {
        // 009: prefill passes admit 1, 8, 16 and 14 requests in 10 s (lines 1-4), running 1,
        // 2, 10, 26, then 40 on the decode line (line 5), #queue-req 0 on every line
        with_input(&whole(MAMBA_RAMP), |i| {
            let f = check(i).expect("ramp");
            assert_eq!(
                f.ramp,
                Ramp {
                    running_start: 1,
                    running_end: 40,
                    queued_start: 0,
                    queued_end: 0
                }
            );
        });
        // one request waiting on one line is neither a drain nor an arrival ramp
        with_input(
            &edit(
                &whole(MAMBA_RAMP),
                "#queue-req: 0, #pending",
                "#queue-req: 1, #pending",
            ),
            |i| assert_eq!(check(i), None),
        );
        // a climb of 4 (1 -> 5) is not more than the minimum rise
        let low = set_field(&excerpt(MAMBA_RAMP, 1..=4), "#running-req", "1");
        with_input(&low, |i| assert_eq!(check(i), None));
    }

    #[test]
    fn a_batch_that_levels_off_in_its_later_half_is_no_ramp() {
        // GuideLLM at concurrency 64 against a 20,000-token pool (clients/README.md): running
        // 24 -> 32 over the first half, then 29-32 while ~33 wait and usage holds 0.85-0.92:
        // a full pool, not a burst still being admitted
        let log = "clients/guidellm-0.8.1/server.log";
        with_input(&whole(log), |i| assert_eq!(check(i), None));
    }

    /// real/034: every prefill pass fills exactly 2048 tokens with 2 sequences, one of them a
    /// chunked prompt's continuation counted again each pass: no count of admitted requests,
    /// so no claim that a client kept its load on; the climb is worded as a ramp.
    #[test]
    fn chunked_passes_count_no_admissions() {
        with_input(
            &whole("real/034-i2255-cache-hit-rate-field-chunked-prefill.log"),
            |i| {
                let f = check(i).expect("a ramp");
                assert_eq!(f.admitted, None);
                assert!(!f.under_load());
            },
        );
    }

    #[test]
    fn too_few_lines_after_the_peak() {
        with_input(&excerpt(CHUNKS, 1..=3), |i| assert_eq!(check(i), None));
    }

    /// bench_serving's run at `--max-concurrency 64` against the simulator, its log cut at
    /// half (line 119 of 239: mid-run, the client still holding 64 in flight): running climbs
    /// 15 → 23 while the queue falls 49 → 41, but ~100 requests arrived meanwhile. It ends under
    /// full load, not in a burst's ramp-up (before: "the log holds only the ramp-up of a
    /// burst", issue 32).
    #[test]
    fn a_log_cut_mid_run_ends_under_load() {
        const RUN: &str = "clients/sglang-bench-serving-0.5.23/server.log";
        with_input(&excerpt(RUN, 1..=119), |i| {
            let f = check(i).expect("a climb");
            assert_eq!((f.ramp.queued_start, f.ramp.queued_end), (49, 41));
            let (admitted, span) = f.admitted.expect("counted");
            assert!(f.under_load(), "{f:?}");
            assert!(admitted > 100 && span > 40.0, "{f:?}");
            let w = RampOnly::finding(&f, i);
            assert_eq!(w.kind, FindingKind::EndsUnderLoad);
        });
        // the real burst's queue drains only by admission: a ramp-up still
        with_input(&whole(BURST), |i| {
            let f = check(i).expect("ramp");
            assert!(!f.under_load(), "{f:?}");
            assert_eq!(RampOnly::finding(&f, i).kind, FindingKind::RampOnly);
        });
    }
}
