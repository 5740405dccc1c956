//! # `running_cap`: the running batch is pinned at a ceiling while requests wait
//!
//! **What it detects.** `#running-req` at `max_running_requests` on at least
//! [`th::AT_CAP_SHARE`] of the steady lines; or, with a standing queue, the mamba state slots
//! of a hybrid SSM model full (`mamba usage` ≥ [`th::MAMBA_FULL_USAGE`]); or, with a standing
//! queue and the KV pool below [`th::CONSERVATIVE_USAGE`], a flat ceiling: the running count at
//! its maximum on at least [`th::PLATEAU_SHARE`] of the lines (a cap the log does not print);
//! or the same running count on every steady decode line of every scheduler, at least
//! [`th::MIN_PINNED_LINES`] of them, while requests wait on some ([`pinned`]): a cap, seen
//! across the ranks even when each rank prints a line or two (prefill lines are left out:
//! their `#running-req` is counted before the batch's new requests join).
//!
//! **Why it matters.** Whatever the client sends and whatever the pool holds, no more than the
//! cap run at once; the queue only lengthens the time to first token.
//!
//! **Evidence it needs.** Steady batch lines with `#running-req` (and `#queue-req`,
//! `token usage`, `mamba usage`); `max_running_requests` from the startup line, server args or
//! server info for the first form.
//!
//! **What to change.** Raise `--max-running-requests` (per DP rank) if the KV cache has room,
//! together with the client's concurrency when it equals the cap; for hybrid models the mamba
//! state cache must grow with it.
//!
//! **Source.** SGLang `schedule_policy.py` (`PrefillAdder` stops at `max_running_requests`),
//! `mem_cache/memory_pool.py` (`MambaPool` slots per request); spec §2.1 and §5.3.

pub use crate::evidence::view::pinned;
use crate::evidence::view::{SchedulerView, share};
use crate::narrative::words::pool_room_clause;
use crate::report::{CapacitySummary, Confidence, Figure, FindingKind, Lever, Unit};
use crate::rules::{VerdictWords, on_rank};
use crate::thresholds as th;

/// Which ceiling holds the batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// `max_running_requests`, as configured.
    Configured {
        /// The cap (requests per DP rank).
        cap: u64,
        /// Share of steady lines at the cap (fraction).
        share: f64,
    },
    /// The mamba state slots are full.
    MambaSlots {
        /// Share of steady decode lines with full slots (fraction).
        share: f64,
    },
    /// A flat ceiling the log does not name.
    Plateau {
        /// The ceiling (requests).
        ceiling: u64,
        /// Share of steady lines at it (fraction).
        share: f64,
    },
}

impl Limit {
    /// Share of the steady lines at the limit (fraction).
    pub fn share(&self) -> f64 {
        match *self {
            Limit::Configured { share, .. }
            | Limit::MambaSlots { share }
            | Limit::Plateau { share, .. } => share,
        }
    }
}

/// Pinned at the configured `max_running_requests`: the batch sits at the cap on at least
/// [`th::AT_CAP_SHARE`] of the steady lines, or it reaches the cap on at least
/// [`th::AT_CAP_DEMAND_MIN_SHARE`] of them while running plus queued requests reach it on at
/// least [`th::AT_CAP_SHARE`] (the demand meets the cap; the requests below it wait for their
/// prefill turn, and admitting them faster would only fill the cap sooner). A prefill line
/// counts the batch once its pass's requests join (`#running-req` + `#new-seq`): its
/// `#running-req` is the batch before them (`scheduler.py`'s `log_prefill_stats`), so a pass
/// that fills the batch to the cap shows the cap only after it.
pub fn at_configured_cap(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<Limit> {
    let c = cap.max_running_requests.filter(|&c| c > 0)?;
    let counts: Vec<u64> = v
        .steady_decode
        .iter()
        .filter_map(|d| d.running)
        .chain(
            v.steady_prefill
                .iter()
                .filter_map(|p| Some(p.running? + p.new_seq.unwrap_or(0))),
        )
        .collect();
    if counts.is_empty() {
        return None;
    }
    let s = counts.iter().filter(|&&r| r >= c).count() as f64 / counts.len() as f64;
    let demand = share(&v.steady, |o| {
        o.running.map(|r| r + o.queue.unwrap_or(0) >= c)
    })
    .unwrap_or(0.0);
    (s >= th::AT_CAP_SHARE || (s >= th::AT_CAP_DEMAND_MIN_SHARE && demand >= th::AT_CAP_SHARE))
        .then_some(Limit::Configured { cap: c, share: s })
}

/// Whether the KV pool is nearly full as well as the cap reached (median token usage at least
/// [`th::CONSERVATIVE_USAGE`]): then both limits bind, and raising the cap alone would run the
/// pool out (retraction).
pub fn pool_near_full(v: &SchedulerView<'_>) -> bool {
    v.median_usage()
        .is_some_and(|u| u >= th::CONSERVATIVE_USAGE)
}

/// Nothing waits anywhere the log shows: `#queue-req` printed and 0 on every steady decode
/// and prefill line, and not a PD decode node (whose waiting requests sit on the prefill
/// side's bootstrap queue, admitted by pre-allocation only when the decode side has room,
/// `disaggregation/decode.py`). At the cap, then, the cap holds back no request the log shows.
pub fn nothing_waits(v: &SchedulerView<'_>) -> bool {
    v.queued.max == Some(0.0)
        && v.steady_prefill.iter().all(|p| p.queue.unwrap_or(0) == 0)
        && !v.is_pd_decode()
}

/// Requests wait while the mamba state slots are full.
pub fn mamba_slots_full(v: &SchedulerView<'_>) -> Option<Limit> {
    if !v.queued() {
        return None;
    }
    let s = share(&v.steady_decode, |d| {
        d.mamba_usage.map(|m| m >= th::MAMBA_FULL_USAGE)
    })?;
    (s >= th::MAMBA_FULL_SHARE).then_some(Limit::MambaSlots { share: s })
}

/// Requests wait at a flat running ceiling the log does not name: a cap (`max_running_requests`
/// from an unlogged argument, the mamba state slots; not a router's limit, since the queue is the
/// scheduler's own), whatever the pool's
/// usage ([`pool_near_full`] says whether the pool binds too). Not when the log names a cap
/// above the ceiling: then something else holds the batch there.
pub fn flat_plateau(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<Limit> {
    // pinned on every line of every rank while requests wait somewhere: the cap of each
    if let Some(p) = v.pinned_across_ranks
        && cap.max_running_requests.is_none_or(|c| c <= p)
        && v.steady_decode.iter().any(|d| d.running == Some(p))
    {
        return Some(Limit::Plateau {
            ceiling: p,
            share: 1.0,
        });
    }
    if !v.queued() || v.steady.len() < th::MIN_PLATEAU_LINES {
        return None;
    }
    // the highest running count, how many lines sit at it and how many read it, in one pass;
    // the lines below the highest count so far stay below the ceiling, so once they are more
    // than a fifth of all steady lines (and a margin) the share at the ceiling cannot reach
    // PLATEAU_SHARE: no plateau (a serving log's wavering batch settles it early)
    let below_limit = (v.steady.len() as f64 * (1.0 - th::PLATEAU_SHARE)) as usize + 3;
    let (mut ceiling, mut at, mut read) = (None, 0usize, 0usize);
    for r in v.steady.iter().filter_map(|o| o.running) {
        read += 1;
        match ceiling {
            Some(c) if r < c => {
                if read - at >= below_limit {
                    return None;
                }
            }
            Some(c) if r == c => at += 1,
            _ => (ceiling, at) = (Some(r), 1),
        }
    }
    let ceiling = ceiling?;
    if cap.max_running_requests.is_some_and(|c| c > ceiling) || ceiling == 0 {
        return None;
    }
    // `share` of the lines at the ceiling among those that read it
    let s = at as f64 / read as f64;
    (s >= th::PLATEAU_SHARE).then_some(Limit::Plateau { ceiling, share: s })
}

/// How a verdict on this rule's [`Limit`] stands, as the verdict's reason says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// Requests wait while the batch sits at the limit: `running_cap_bound`.
    Queue,
    /// At the configured cap while nothing waits anywhere the log shows ([`nothing_waits`]).
    NothingWaits,
    /// At a cap the log does not state but assumes (SGLang's default under speculative
    /// decoding) while no line reads the KV pool: the cap or the pool holds the queue.
    AssumedCapUnreadPool,
}

/// The finding of a verdict on the running cap in this rule's words: limit `l` as `held` says,
/// on the scheduler `v` whose verdict it is, with the capacity `cap`.
pub(crate) fn finding(
    l: &Limit,
    held: Held,
    v: &SchedulerView<'_>,
    cap: &CapacitySummary,
) -> VerdictWords {
    if held == Held::AssumedCapUnreadPool {
        let c = cap.max_running_requests.unwrap_or(0);
        // below the cap, does each pass still take one request? (a prefill line counts the
        // batch before its own requests join)
        let passes: Vec<_> = v
            .steady_prefill
            .iter()
            .filter(|p| p.queue.unwrap_or(0) > 0)
            .collect();
        let one_below_cap = passes
            .iter()
            .filter(|p| p.running.is_some_and(|r| r + p.new_seq.unwrap_or(0) < c))
            .collect::<Vec<_>>();
        let per_pass = if !one_below_cap.is_empty()
            && one_below_cap.iter().all(|p| p.new_seq == Some(1))
        {
            format!(
                " Where the batch stays below {c} ({} of {} passes with a queue), a pass still admits one request: a prefill budget below two prompts, or the KV reserve, stops it there, so the per-pass admission holds the queue as much as the cap.",
                one_below_cap.len(),
                passes.len()
            )
        } else {
            String::new()
        };
        let (kind, title, detail, confidence) = (
            FindingKind::RunningCapBound,
            if per_pass.is_empty() {
                "Running-request cap or KV pool: the log cannot tell"
            } else {
                "Running-request cap, KV pool or per-pass admission: the log cannot tell"
            }
            .to_string(),
            format!(
                "~{:.0} requests wait while the running batch reaches {} (counting each prefill pass's new requests{}): SGLang's default max_running_requests with speculative decoding (server_args.py resets an unset cap to {}), which the log does not print, and no line reads the KV pool's token usage. Either that cap holds the queue, or the KV pool (with the reserve SGLang keeps for the running requests' remaining tokens) is full at about that many requests.{per_pass} The start-up lines (max_running_requests, chunked_prefill_size, max_total_num_tokens) or a batch line with token usage tell which: a higher --max-running-requests admits more only when the cap is {} and the pool has room; a full pool needs more KV memory instead.",
                v.queued.median.unwrap_or(0.0),
                cap.max_running_requests.unwrap_or(0),
                if l.share() < th::AT_CAP_SHARE {
                    format!(", on {:.0}% of the lines", l.share() * 100.0)
                } else {
                    String::new()
                },
                th::SPEC_DEFAULT_MAX_RUNNING,
                cap.max_running_requests.unwrap_or(0),
            ),
            Confidence::Low,
        );
        return VerdictWords::new(kind, title, detail, confidence);
    }
    let mut lead = Vec::new();
    if held == Held::Queue {
        match l {
            Limit::Configured { cap: c, share } => {
                lead.push(Figure::new(
                    "max_running_requests",
                    *c as f64,
                    Unit::Requests,
                ));
                lead.push(Figure::new(
                    on_rank(v, "share of batch lines at the cap"),
                    *share,
                    Unit::Fraction,
                ));
            }
            Limit::MambaSlots { share } => lead.push(Figure::new(
                on_rank(
                    v,
                    &format!(
                        "share of decode lines with mamba usage >= {}",
                        th::MAMBA_FULL_USAGE
                    ),
                ),
                *share,
                Unit::Fraction,
            )),
            Limit::Plateau { share, .. } => lead.push(Figure::new(
                on_rank(v, "share of lines at the running plateau"),
                *share,
                Unit::Fraction,
            )),
        }
    }
    let waits = v.queued.median.is_some_and(|q| q >= 1.0);
    let mamba_full = (held == Held::Queue && matches!(l, Limit::MambaSlots { .. }))
        || v.tl
            .agg
            .max_mamba_usage
            .is_some_and(|m| m >= th::MAMBA_FULL_USAGE);
    let mut levers = vec![Lever::MaxRunningRequests];
    if mamba_full {
        levers.push(Lever::MaxMambaCacheSize);
    }
    // an Ascend build's KV cache has no fp8: only more memory grows the pool there
    let npu = v.steady_decode.iter().any(|d| d.npu);
    if pool_near_full(v) {
        levers.push(Lever::MemFractionStatic);
        if !npu {
            levers.push(Lever::KvCacheDtype);
        }
    }
    let (kind, title, detail, confidence) = (
        FindingKind::RunningCapBound,
        match held {
            Held::NothingWaits => {
                "At the running-request cap, with nothing waiting".to_string()
            }
            _ => "Running-request cap bound".to_string(),
        },
        format!(
            "The running batch {} its ceiling{}{}{}{}.{} {}",
            if l.share() < th::AT_CAP_SHARE {
                format!("reaches (on {:.0}% of the lines, with running plus waiting requests filling it)", l.share() * 100.0)
            } else {
                "stays at".to_string()
            },
            match (cap.max_running_requests, v.pinned_across_ranks) {
                (Some(c), _) if cap.max_running_inferred => format!(
                    " ({c} per DP rank: SGLang's default max_running_requests with speculative decoding, which the log does not print but every decode line reaches and none exceeds)"
                ),
                (Some(c), _) => format!(" (max_running_requests={c} per DP rank)"),
                (None, Some(p)) => format!(
                    " of {p} requests on every decode line of every rank (a cap of {p} per DP rank: max_running_requests, which the log does not print; not a router's limit, since requests wait in the scheduler's own queue)"
                ),
                _ => String::new(),
            },
            if waits { " while requests queue" } else { "" },
            // a PD decode node reserves KV for requests still in transfer
            throughput_stats::median_f64(
                &v.steady_decode
                    .iter()
                    .filter_map(|d| d.pre_allocated_usage)
                    .collect::<Vec<_>>()
            )
            .filter(|p| *p > 0.0)
            .map(|p| format!(
                "; of the pool, ~{p:.2} is pre-allocated for requests whose KV is still in transfer (a PD decode node reserves it before the transfer)"
            ))
            .unwrap_or_default(),
            if pool_near_full(v) {
                format!(
                    ", and the KV pool is nearly full too (token usage ~{:.2}): both limits bind, so raising the cap alone would run the pool out and retract requests",
                    v.median_usage().unwrap_or(0.0)
                )
            } else {
                pool_room_clause(&v.pool_room)
            },
            if mamba_full {
                " Mamba usage reaches 1.00: the mamba state slots of this hybrid model are full, so they cap the batch as much as max_running_requests: raise --max-mamba-cache-size with it (SGLang caps max_running_requests by the mamba cache)."
            } else {
                ""
            },
            if held == Held::NothingWaits {
                "Nothing waits, so the cap holds back no request the log shows: if the client has more to send than the cap, raise both together; if not, the client sets the load."
            } else if pool_near_full(v) && npu {
                "Raise it together with the KV pool (mem_fraction_static; an Ascend build's KV cache has no fp8), or leave it."
            } else if pool_near_full(v) {
                "Raise it together with the KV pool (mem_fraction_static, fp8 KV cache), or leave it."
            } else {
                "Raise it if memory allows; if the client's concurrency equals this cap, raise both together, since either alone changes nothing."
            }
        ),
        match held {
            Held::NothingWaits => Confidence::Low,
            _ => Confidence::Medium,
        },
    );
    VerdictWords::new(kind, title, detail, confidence)
        .levers(levers)
        .lead(lead)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, excerpt, only, set_field, whole, with_input};

    const MAXRUN2: &str = "real-long/ascend-dsr1-pd-decode-maxrun2-queued.log";
    const MAMBA: &str = "real-long/ascend-qwen3next-80b-hybrid-mamba.log";

    fn cap(n: u64) -> CapacitySummary {
        CapacitySummary {
            max_running_requests: Some(n),
            ..CapacitySummary::default()
        }
    }

    fn dp1() -> String {
        only(&excerpt(MAXRUN2, 2200..=2600), "DP1 TP2")
    }

    #[test]
    fn pinned_at_32_on_every_rank_is_a_cap() {
        // real-3/018: a PD decode node, one line per DP rank, each at 32 running, queue 0-2
        with_input(
            &crate::rules::testing::whole("real-3/018-pr11854-h20-dp-ep-custom-logformat-mtp.log"),
            |i| {
                assert_eq!(pinned(i.views), Some(32));
                for v in i.views {
                    assert_eq!(
                        flat_plateau(v, i.capacity),
                        Some(Limit::Plateau {
                            ceiling: 32,
                            share: 1.0
                        })
                    );
                }
            },
        );
    }

    #[test]
    fn pinned_needs_a_wait_and_one_count() {
        let f = "real-3/018-pr11854-h20-dp-ep-custom-logformat-mtp.log";
        // nothing waits anywhere: no cap is seen
        with_input(
            &set_field(&crate::rules::testing::whole(f), "#queue-req", "0"),
            |i| assert_eq!(pinned(i.views), None),
        );
        // one rank at 31: not one count
        with_input(
            &crate::rules::testing::edit(
                &crate::rules::testing::whole(f),
                "#running-req: 32, #token: 157952",
                "#running-req: 31, #token: 157952",
            ),
            |i| assert_eq!(pinned(i.views), None),
        );
    }

    #[test]
    fn pinned_at_the_configured_cap() {
        with_input(&dp1(), |i| {
            let got = at_configured_cap(&i.views[0], &cap(2));
            assert!(
                matches!(got, Some(Limit::Configured { cap: 2, share }) if share == 1.0),
                "{got:?}"
            );
        });
    }

    #[test]
    fn below_the_cap_is_not_pinned() {
        with_input(&dp1(), |i| {
            assert_eq!(at_configured_cap(&i.views[0], &cap(3)), None)
        });
        with_input(&dp1(), |i| {
            assert_eq!(
                at_configured_cap(&i.views[0], &CapacitySummary::default()),
                None
            )
        });
    }

    #[test]
    fn full_mamba_slots_cap_the_batch_only_when_requests_wait() {
        let lines = only(&excerpt(MAMBA, 600..=700), "Decode batch");
        with_input(&lines, |i| assert_eq!(mamba_slots_full(&i.views[0]), None));
        let queued = set_field(&lines, "#queue-req", "5");
        with_input(&queued, |i| {
            assert!(matches!(
                mamba_slots_full(&i.views[0]),
                Some(Limit::MambaSlots { .. })
            ));
        });
    }

    #[test]
    fn a_flat_ceiling_is_a_cap_whatever_the_usage() {
        let none = CapacitySummary::default();
        with_input(&dp1(), |i| {
            let v = &i.views[0];
            assert!(v.queued());
            assert_eq!(
                flat_plateau(v, &none),
                Some(Limit::Plateau {
                    ceiling: 2,
                    share: 1.0
                })
            );
            assert!(!pool_near_full(v));
        });
        // The same lines at a nearly full pool: still the cap, and the pool binds too.
        let full = set_field(&dp1(), "token usage", "0.85");
        with_input(&full, |i| {
            assert!(flat_plateau(&i.views[0], &none).is_some());
            assert!(pool_near_full(&i.views[0]));
        });
        // A cap named above the ceiling: the ceiling is not that cap.
        with_input(&dp1(), |i| {
            assert_eq!(flat_plateau(&i.views[0], &cap(16)), None)
        });
    }

    #[test]
    fn demand_at_the_cap_binds_it() {
        // DP16 with 16 running requests per rank at most (max_running_requests=16 per rank):
        // the batch sits at 16 on a third of the lines and running plus queued reach 16 on most.
        let rank = only(
            &excerpt("real-long/ascend-dsr1-dp16-mtp-mixed.log", 5000..=8000),
            "DP5 TP5",
        );
        with_input(&rank, |i| {
            let got = at_configured_cap(&i.views[0], &cap(16));
            assert!(
                matches!(got, Some(Limit::Configured { cap: 16, .. })),
                "{got:?}"
            );
        });
        // The same lines with nothing queued: the demand is below the cap.
        let idle = set_field(&rank, "#queue-req", "0");
        with_input(&idle, |i| {
            let v = &i.views[0];
            let at = share(&v.steady, |o| o.running.map(|r| r >= 16)).unwrap();
            assert_eq!(
                at_configured_cap(v, &cap(16)).is_some(),
                at >= th::AT_CAP_SHARE,
                "{at}"
            );
        });
    }

    #[test]
    fn at_the_cap_with_nothing_waiting_holds_nothing_back() {
        // 036: 48 running (speculative decoding's default cap) and #queue-req 0 on every line
        let lines = whole("real-3/036-fastrl-pr4-custom-fmt-spec-accept-len-1.log");
        with_input(&lines, |i| {
            let v = &i.views[0];
            assert!(i.capacity.max_running_inferred);
            assert!(at_configured_cap(v, i.capacity).is_some());
            assert!(nothing_waits(v));
            assert!(matches!(
                crate::verdict::classify(v, i.capacity),
                crate::verdict::Reason::AtCapNothingWaits(Limit::Configured { cap: 48, .. })
            ));
        });
        // one request waiting on every line: the cap holds it back
        let queued = set_field(&lines, "#queue-req", "1");
        with_input(&queued, |i| {
            assert!(!nothing_waits(&i.views[0]));
            assert!(matches!(
                crate::verdict::classify(&i.views[0], i.capacity),
                crate::verdict::Reason::RunningCap(_)
            ));
        });
    }

    #[test]
    fn an_assumed_cap_with_the_pool_unread_is_not_told_from_the_pool() {
        // 021 (a speculative build, its lines cut by a terminal): five prefill passes of one
        // request each at 45-47 running; after two of them the batch is at 48, SGLang's
        // default cap with speculative decoding, and no line reads token usage
        let lines = whole("real-3/021-pr25960-npu-column-truncated-malformed.log");
        with_input(&lines, |i| {
            let v = &i.views[0];
            assert!(i.capacity.max_running_inferred);
            assert_eq!(i.capacity.max_running_requests, Some(48));
            let got = at_configured_cap(v, i.capacity);
            // 2 of 6 lines at 48: the two passes that fill it
            assert!(
                matches!(got, Some(Limit::Configured { cap: 48, share }) if (share - 2.0 / 6.0).abs() < 1e-9),
                "{got:?}"
            );
            assert!(matches!(
                crate::verdict::classify(v, i.capacity),
                crate::verdict::Reason::AssumedCapUnreadPool(_)
            ));
            // its words name the three readings: the passes below 48 took one request each
            let w = finding(&got.unwrap(), Held::AssumedCapUnreadPool, v, i.capacity);
            assert_eq!(
                w.title,
                "Running-request cap, KV pool or per-pass admission: the log cannot tell"
            );
            assert!(
                w.detail.contains("(3 of 5 passes with a queue)"),
                "{}",
                w.detail
            );
            assert!(w.levers.is_empty());
        });
        // a line that reads the pool: the assumed cap is the verdict
        let read = edit(
            &lines,
            "token usaccept rate: 0.32",
            "token usage: 0.50, accept rate: 0.32",
        );
        with_input(&read, |i| {
            assert!(matches!(
                crate::verdict::classify(&i.views[0], i.capacity),
                crate::verdict::Reason::RunningCap(Limit::Configured { cap: 48, .. })
            ));
        });
        // boundary: one pass that takes the batch to 49 is above SGLang's default, so no cap
        // is assumed and one request a pass is what the lines show
        let above = edit(
            &lines,
            "#cached-tounning-req: 47, #queue-req: 80",
            "#cached-tounning-req: 48, #queue-req: 80",
        );
        with_input(&above, |i| {
            assert!(!i.capacity.max_running_inferred);
            assert!(matches!(
                crate::verdict::classify(&i.views[0], i.capacity),
                crate::verdict::Reason::PrefillLimit(_)
            ));
        });
    }

    #[test]
    fn the_words_follow_how_the_cap_holds() {
        // 036: 48 running (speculative decoding's default cap) and #queue-req 0 on every line
        let lines = whole("real-3/036-fastrl-pr4-custom-fmt-spec-accept-len-1.log");
        with_input(&lines, |i| {
            let v = &i.views[0];
            let l = at_configured_cap(v, i.capacity).expect("at the cap");
            // nothing waits: the cap holds nothing back the log shows, a low-confidence finding
            let w = finding(&l, Held::NothingWaits, v, i.capacity);
            assert_eq!(w.title, "At the running-request cap, with nothing waiting");
            assert_eq!(w.confidence, Confidence::Low);
            assert!(w.lead.is_empty());
            assert_eq!(w.levers.first(), Some(&Lever::MaxRunningRequests));
            // requests wait at the cap: the cap and its share lead the figures
            let w = finding(&l, Held::Queue, v, i.capacity);
            assert_eq!(w.title, "Running-request cap bound");
            assert_eq!(w.confidence, Confidence::Medium);
            let lead: Vec<&str> = w.lead.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(
                lead,
                ["max_running_requests", "share of batch lines at the cap"]
            );
            // the cap assumed and the pool unread: the log cannot tell, so no lever
            let w = finding(&l, Held::AssumedCapUnreadPool, v, i.capacity);
            assert_eq!(w.confidence, Confidence::Low);
            assert!(w.levers.is_empty() && w.lead.is_empty());
        });
    }

    #[test]
    fn a_pd_decode_node_with_an_empty_queue_still_has_waiters_upstream() {
        // 108: PD decode ranks at 26 with #queue-req 0: their waiting requests are on the
        // prefill side, admitted by pre-allocation only when the decode side has room
        let lines = whole("real-4/108-npu-pd-decode-2node-dp32-mtp-cap26-usage078-transfer.log");
        with_input(&lines, |i| {
            let v = i.views.iter().find(|v| v.is_pd_decode()).unwrap();
            assert_eq!(v.queued.max, Some(0.0));
            assert!(!nothing_waits(v));
        });
    }

    #[test]
    fn the_speculative_default_is_the_servers_not_each_dp_ranks() {
        // 060: 48 running on every rank of a DP16 PD decode node with accept len printed: with
        // DP attention SGLang's default (48) is divided over the ranks, so 48 a rank is a cap
        // set on purpose, not the default
        with_input(
            &whole("real-3/060-antgroup-pr4-h20-pd-decode-dp16-space-in-bracket.log"),
            |i| {
                assert!(!i.capacity.max_running_inferred);
                assert_eq!(i.capacity.max_running_requests, None);
                assert!(i.views.iter().all(|v| v.pinned_across_ranks == Some(48)));
            },
        );
    }
}
