//! The one place that turns rule results into the bottleneck.
//!
//! **Per scheduler** the first rule of [`SCHEDULER_PRECEDENCE`] that holds names its
//! bottleneck:
//!
//! | # | rule | bottleneck |
//! |---|---|---|
//! | 1 | no steady lines | `no_scheduler_lines` |
//! | 2 | `pd_transfer` | `pd_transfer_bound`; `prefill_bound` when the prefill server's own passes are full (`FullBatches`) |
//! | 2a | `admission::decisive`: the constraint that holds back nine tenths of the queued request-time (KV pool, mamba slots, running cap), worded by its rule | its rule's |
//! | 3 | `kv_cache_bound::queued_at_full_pool` | `kv_cache_bound` |
//! | 4 | `running_cap::at_configured_cap` | `running_cap_bound`; `inconclusive` when nothing waits anywhere the log shows (`running_cap::nothing_waits`: the queue printed and 0 on every steady decode and prefill line, not a PD decode node): the cap holds nothing back; `inconclusive` too when the cap is only assumed (SGLang's speculative default, `CapacitySummary::max_running_inferred`) and no line reads the KV pool: the cap or the pool holds the queue |
//! | 5 | `running_cap::mamba_slots_full` (queued) | `running_cap_bound` |
//! | 5a | `client_bound::lone_reading` (one steady batch line with a queue, or one decode line at a crawl: an instant) | `inconclusive` |
//! | 5b | `prefill_limit`, one request per pass (queued) | `prefill_bound` |
//! | 6 | `running_cap::flat_plateau` (queued) | `running_cap_bound` |
//! | 7 | `kv_cache_bound::fills_as_admitted` (queued ramp) | `kv_cache_bound` |
//! | 8 | `prefill_limit` (queued) | `prefill_bound` |
//! | 9 | `conservative_admission` (queued) | `scheduler_conservative` |
//! | 10 | `held_admission` (queued) | `admission_held` |
//! | 11 | queued, nothing above | `inconclusive` |
//! | 12 | `drain` (the span only falls, nothing waits or is admitted) | `drain` |
//! | 12b | `client_bound` | `client_bound` |
//! | 13 | `kv_cache_bound::full_without_queue` | `kv_cache_bound` |
//! | 14 | otherwise | `inconclusive` |
//!
//! **Over schedulers** each verdict gets the steady lines of its schedulers as votes; the most
//! votes win, ties broken by [`priority`]. A KV-bound scheduler holding at least
//! [`th::KV_VOTE_SHARE`] of the votes makes the server KV-bound (under DP attention any full
//! rank caps them all).
//!
//! **Events that end serving come first** ([`ENDS_SERVING`]), batch lines or not, first match
//! wins: `oom` → `out_of_memory`, `scheduler_exception` → `scheduler_crashed`, `watchdog` →
//! `stall`: the server stopped there, whatever its batch lines said before.
//!
//! **Overrides**, in this order, for a weak verdict (`client_bound`, `inconclusive`, none; for
//! the compute rules also `prefill_bound` and `scheduler_conservative`), when no long stall and
//! no watchdog explain the slowness: `decode_compute` → `decode_compute_bound`;
//! `prefill_compute` → `prefill_compute_bound`. Then, for a weak vote (whatever the compute
//! rules said): a long stall or a watchdog timeout → `stall`; else failed KV transfers →
//! `kv_transfer_failed`; else retractions → `kv_cache_bound` (the pool ran out at the run's
//! peak even if the queue was short). Before the compute overrides, a weak vote whose log ends
//! in a JIT compile session (DeepGEMM's pre-compile entered after the last batch line) is
//! `inconclusive`: the lines are the server's warm-up.
//!
//! **Without batch lines** (the vote is `no_scheduler_lines`) the events name the verdict,
//! first match wins ([`NO_LINES_PRECEDENCE`]):
//!
//! | # | rule | bottleneck |
//! |---|---|---|
//! | 1 | `oom` | `out_of_memory` |
//! | 2 | `scheduler_exception` | `scheduler_crashed` |
//! | 3 | `watchdog` | `stall` |
//! | 4 | `kv_transfer` | `kv_transfer_failed` |
//! | 5 | `startup_incomplete`, before the KV pool or during CUDA-graph capture | `startup_incomplete` |
//! | 6 | `rejected_requests` | `requests_rejected` |
//! | 7 | startup capacity lines (`max_total_num_tokens`) | `startup_only` |
//! | 8 | otherwise | `no_scheduler_lines` |

use crate::evidence::view::{SchedulerView, share};
use crate::report::{Bottleneck, CapacitySummary};
use crate::rules::admission::{self, Constraint};
use crate::rules::{
    client_bound, conservative_admission, drain, held_admission, kv_cache_bound, pd_transfer,
    prefill_limit, running_cap,
};
use crate::thresholds as th;

/// Why one scheduler got its verdict: the facts of the rule that held.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// No steady batch lines.
    NoLines,
    /// `pd_transfer`.
    PdTransfer(pd_transfer::Facts),
    /// `kv_cache_bound`.
    KvCache(kv_cache_bound::Pattern),
    /// `running_cap`.
    RunningCap(running_cap::Limit),
    /// `running_cap` at the configured cap while nothing waits anywhere the log shows
    /// (`running_cap::nothing_waits`): the cap holds no request back, and whether the client
    /// has more to send is not in the log.
    AtCapNothingWaits(running_cap::Limit),
    /// `running_cap` at a cap the log does not state but assumes (SGLang's default under
    /// speculative decoding, [`CapacitySummary::max_running_inferred`]) while no line reads
    /// the KV pool: the cap or the pool holds the queue, and the log cannot tell which.
    AssumedCapUnreadPool(running_cap::Limit),
    /// `prefill_limit`.
    PrefillLimit(prefill_limit::Facts),
    /// `conservative_admission`, with the median token usage (fraction).
    Conservative(f64),
    /// `held_admission`.
    HeldAdmission(held_admission::Facts),
    /// One steady batch line: an instant, from which the limits that need a phase (an inferred
    /// cap, prefill's pace, the admission reserve, the client's load) do not follow.
    LoneReading,
    /// Requests wait but no rule explains why.
    QueuedUnexplained,
    /// `drain`.
    Drain(crate::rules::drain::Facts),
    /// `client_bound`.
    ClientBound,
    /// Nothing holds.
    Unexplained,
}

impl Reason {
    /// The bottleneck this reason names.
    pub fn bottleneck(&self) -> Bottleneck {
        match self {
            Reason::NoLines => Bottleneck::NoSchedulerLines,
            // the prefill server's own passes are full: prefill capacity, not the decode side
            Reason::PdTransfer(f) if f.full_batches.is_some() => Bottleneck::PrefillBound,
            Reason::PdTransfer(_) => Bottleneck::PdTransferBound,
            Reason::KvCache(_) => Bottleneck::KvCacheBound,
            Reason::RunningCap(_) => Bottleneck::RunningCapBound,
            Reason::PrefillLimit(_) => Bottleneck::PrefillBound,
            Reason::Conservative(_) => Bottleneck::SchedulerConservative,
            Reason::HeldAdmission(_) => Bottleneck::AdmissionHeld,
            Reason::Drain(_) => Bottleneck::Drain,
            Reason::ClientBound => Bottleneck::ClientBound,
            Reason::LoneReading
            | Reason::AtCapNothingWaits(_)
            | Reason::AssumedCapUnreadPool(_)
            | Reason::QueuedUnexplained
            | Reason::Unexplained => Bottleneck::Inconclusive,
        }
    }
}

/// One step of the per-scheduler precedence.
type Step = fn(&SchedulerView<'_>, &CapacitySummary) -> Option<Reason>;

/// The admission model's binding constraint, when it holds back nine tenths of the queued
/// request-time, as the rule of that constraint words it: the KV pool, the mamba slots, or the
/// running cap (configured or a flat ceiling). The prefill budget, one request per pass and the
/// SWA pool are left to the steps after (a ramp's prefill pace; the one-per-pass pattern's own
/// step; the KV words name `token usage`). The mamba limit carries the share of steady decode
/// lines with full slots, as `running_cap::mamba_slots_full` does.
fn decisive(v: &SchedulerView<'_>, c: &CapacitySummary) -> Option<Reason> {
    let b = admission::decisive(v, c)?;
    match b.constraint {
        Constraint::KvPool => Some(Reason::KvCache(
            kv_cache_bound::queued_at_full_pool(v)
                .unwrap_or(kv_cache_bound::Pattern::QueuedAtFullPool),
        )),
        Constraint::MambaSlots => {
            let full = share(&v.steady_decode, |d| {
                d.mamba_usage.map(|m| m >= th::MAMBA_FULL_USAGE)
            })?;
            Some(Reason::RunningCap(running_cap::Limit::MambaSlots {
                share: full,
            }))
        }
        Constraint::RunningCap => running_cap::at_configured_cap(v, c)
            .or_else(|| running_cap::flat_plateau(v, c))
            .map(Reason::RunningCap),
        Constraint::SwaPool
        | Constraint::KvReserve
        | Constraint::PrefillBudget
        | Constraint::OnePerPass => None,
    }
}

/// The per-scheduler precedence table (see the module doc), first match wins.
pub const SCHEDULER_PRECEDENCE: &[(&str, Step)] = &[
    ("no steady lines", |v, _| {
        v.steady.is_empty().then_some(Reason::NoLines)
    }),
    ("pd_transfer", |v, c| {
        pd_transfer::check(v, c).map(Reason::PdTransfer)
    }),
    ("admission model (decisive)", decisive),
    ("kv_cache_bound (queued)", |v, _| {
        kv_cache_bound::queued_at_full_pool(v).map(Reason::KvCache)
    }),
    ("running_cap (configured)", |v, c| {
        running_cap::at_configured_cap(v, c).map(|l| {
            if running_cap::nothing_waits(v) {
                Reason::AtCapNothingWaits(l)
            } else if c.max_running_inferred && v.median_usage().is_none() {
                Reason::AssumedCapUnreadPool(l)
            } else {
                Reason::RunningCap(l)
            }
        })
    }),
    ("running_cap (mamba slots)", |v, _| {
        running_cap::mamba_slots_full(v).map(Reason::RunningCap)
    }),
    ("one reading", |v, _| {
        client_bound::lone_reading(v).then_some(Reason::LoneReading)
    }),
    ("prefill_limit (one request per pass)", |v, c| {
        prefill_limit::check(v, c)
            .filter(|f| f.one_per_pass.is_some())
            .map(Reason::PrefillLimit)
    }),
    ("running_cap (flat ceiling)", |v, c| {
        running_cap::flat_plateau(v, c).map(Reason::RunningCap)
    }),
    ("kv_cache_bound (fills as admitted)", |v, _| {
        kv_cache_bound::fills_as_admitted(v).map(Reason::KvCache)
    }),
    ("prefill_limit", |v, c| {
        prefill_limit::check(v, c).map(Reason::PrefillLimit)
    }),
    ("conservative_admission", |v, _| {
        conservative_admission::check(v).map(Reason::Conservative)
    }),
    ("held_admission", |v, c| {
        held_admission::check(v, c).map(Reason::HeldAdmission)
    }),
    ("queued, unexplained", |v, _| {
        v.queued().then_some(Reason::QueuedUnexplained)
    }),
    ("drain", |v, _| drain::check(v).map(Reason::Drain)),
    ("client_bound", |v, _| {
        client_bound::check(v).then_some(Reason::ClientBound)
    }),
    ("kv_cache_bound (no queue)", |v, _| {
        kv_cache_bound::full_without_queue(v).map(Reason::KvCache)
    }),
];

/// One scheduler's verdict.
pub fn classify(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Reason {
    SCHEDULER_PRECEDENCE
        .iter()
        .find_map(|(_, step)| step(v, cap))
        .unwrap_or(Reason::Unexplained)
}

/// Tie-break order between verdicts with equal votes (lower wins).
pub fn priority(b: Bottleneck) -> u8 {
    match b {
        Bottleneck::KvCacheBound => 0,
        Bottleneck::RunningCapBound => 1,
        Bottleneck::PdTransferBound => 2,
        Bottleneck::PrefillBound => 3,
        Bottleneck::SchedulerConservative | Bottleneck::AdmissionHeld => 4,
        Bottleneck::Stall | Bottleneck::DecodeComputeBound | Bottleneck::PrefillComputeBound => 5,
        Bottleneck::ClientBound | Bottleneck::Drain => 6,
        Bottleneck::Inconclusive => 7,
        Bottleneck::NoSchedulerLines
        | Bottleneck::OutOfMemory
        | Bottleneck::SchedulerCrashed
        | Bottleneck::KvTransferFailed
        | Bottleneck::StartupIncomplete
        | Bottleneck::StartupOnly
        | Bottleneck::RequestsRejected => 8,
    }
}

/// The verdict over schedulers from their verdicts, weighted by their steady lines.
pub fn vote(votes: &[(Bottleneck, u64)]) -> Bottleneck {
    let mut tally: Vec<(Bottleneck, u64)> = Vec::new();
    for &(b, w) in votes {
        match tally.iter_mut().find(|(x, _)| *x == b) {
            Some(t) => t.1 += w,
            None => tally.push((b, w)),
        }
    }
    let total: u64 = tally.iter().map(|t| t.1).sum();
    if let Some(kv) = tally.iter().find(|t| t.0 == Bottleneck::KvCacheBound)
        && kv.1 as f64 >= th::KV_VOTE_SHARE * total as f64
    {
        return Bottleneck::KvCacheBound;
    }
    tally.sort_by(|a, b| b.1.cmp(&a.1).then(priority(a.0).cmp(&priority(b.0))));
    tally.first().map_or(Bottleneck::NoSchedulerLines, |t| t.0)
}

/// What the overrides read.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Overrides {
    /// `decode_compute` holds.
    pub slow_decode: bool,
    /// `prefill_compute` holds.
    pub slow_prefill: bool,
    /// A frozen run of [`th::STALL_MIN_S`] or more.
    pub long_stall: bool,
    /// Watchdog timeout lines.
    pub watchdog: bool,
    /// Retraction events.
    pub retractions: bool,
    /// `oom` holds.
    pub oom: bool,
    /// `scheduler_exception` holds.
    pub crash: bool,
    /// `startup_incomplete` holds and the startup stopped before the KV pool.
    pub startup_incomplete: bool,
    /// The startup's capacity line was read.
    pub startup_capacity: bool,
    /// `rejected_requests` holds.
    pub rejections: bool,
    /// `kv_transfer` holds: KV transfers failed.
    pub transfer_failed: bool,
    /// A JIT compile session (DeepGEMM's pre-compile) began after the last batch line of its
    /// log: the log ends in the server's warm-up.
    pub jit_at_end: bool,
}

/// One row of [`NO_LINES_PRECEDENCE`]: its name, whether it holds, the verdict it names.
pub type NoLinesStep = (&'static str, fn(&Overrides) -> bool, Bottleneck);

/// The verdict of a log without batch lines, by its events (see the module doc), first
/// match wins.
pub const NO_LINES_PRECEDENCE: &[NoLinesStep] = &[
    ("oom", |o| o.oom, Bottleneck::OutOfMemory),
    (
        "scheduler_exception",
        |o| o.crash,
        Bottleneck::SchedulerCrashed,
    ),
    ("watchdog", |o| o.watchdog, Bottleneck::Stall),
    (
        "kv_transfer",
        |o| o.transfer_failed,
        Bottleneck::KvTransferFailed,
    ),
    (
        "startup_incomplete (before the pool, or in graph capture)",
        |o| o.startup_incomplete,
        Bottleneck::StartupIncomplete,
    ),
    (
        "rejected_requests",
        |o| o.rejections,
        Bottleneck::RequestsRejected,
    ),
    (
        "startup capacity",
        |o| o.startup_capacity,
        Bottleneck::StartupOnly,
    ),
];

/// Events that end serving, and so are the verdict even after batch lines ([`decide`]),
/// first match wins: a process out of memory, a scheduler that died, a watchdog that fired.
pub const ENDS_SERVING: &[NoLinesStep] = &[
    ("oom", |o| o.oom, Bottleneck::OutOfMemory),
    (
        "scheduler_exception",
        |o| o.crash,
        Bottleneck::SchedulerCrashed,
    ),
    ("watchdog", |o| o.watchdog, Bottleneck::Stall),
];

/// The server's bottleneck: the vote, then the overrides (see the module doc).
pub fn decide(votes: &[(Bottleneck, u64)], o: Overrides) -> Bottleneck {
    let voted = vote(votes);
    if voted == Bottleneck::NoSchedulerLines
        && let Some((_, _, b)) = NO_LINES_PRECEDENCE.iter().find(|(_, holds, _)| holds(&o))
    {
        return *b;
    }
    // what ended serving is the verdict, whatever the batch lines said before it
    if let Some((_, _, b)) = ENDS_SERVING.iter().find(|(_, holds, _)| holds(&o)) {
        return *b;
    }
    let weak = matches!(
        voted,
        Bottleneck::ClientBound | Bottleneck::Inconclusive | Bottleneck::NoSchedulerLines
    );
    let decode_weak = weak
        || matches!(
            voted,
            Bottleneck::PrefillBound | Bottleneck::SchedulerConservative
        );
    let hung = o.long_stall || o.watchdog;
    // the log ends in a JIT warm-up: its lines are the warm-up's, no load or speed follows
    if weak && !hung && !o.transfer_failed && o.jit_at_end {
        return Bottleneck::Inconclusive;
    }
    let mut b = voted;
    if decode_weak && !hung && o.slow_decode {
        b = Bottleneck::DecodeComputeBound;
    } else if decode_weak && !hung && o.slow_prefill {
        b = Bottleneck::PrefillComputeBound;
    }
    if weak && hung {
        b = Bottleneck::Stall;
    } else if weak && o.transfer_failed {
        b = Bottleneck::KvTransferFailed;
    } else if weak && o.retractions {
        b = Bottleneck::KvCacheBound;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{whole, with_input};

    #[test]
    fn the_precedence_table_on_real_logs() {
        let cases = [
            (
                "real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log",
                Bottleneck::KvCacheBound,
            ),
            (
                "real/031-i22877-pd-prefill-prealloc-rising-custom-fmt.log",
                Bottleneck::PdTransferBound,
            ),
            (
                "real/041-i11970-v0.5.3post3-prefill-queue114-chunk8192.log",
                Bottleneck::PrefillBound,
            ),
            (
                "real/025-sgl-kernel-npu-pr608-tp-ep-prefix-mtp.log",
                Bottleneck::SchedulerConservative,
            ),
            (
                "real/017-i3243-amd-rx7900xtx-rocm.log",
                Bottleneck::ClientBound,
            ),
        ];
        for (file, want) in cases {
            with_input(&whole(file), |i| {
                assert_eq!(
                    classify(&i.views[0], i.capacity).bottleneck(),
                    want,
                    "{file}"
                )
            });
        }
    }

    #[test]
    fn a_kv_bound_quarter_wins_the_vote() {
        let votes = [
            (Bottleneck::ClientBound, 30),
            (Bottleneck::KvCacheBound, 10),
        ];
        assert_eq!(vote(&votes), Bottleneck::KvCacheBound);
        let votes = [
            (Bottleneck::ClientBound, 31),
            (Bottleneck::KvCacheBound, 10),
        ];
        assert_eq!(vote(&votes), Bottleneck::ClientBound);
        assert_eq!(
            vote(&[(Bottleneck::ClientBound, 5), (Bottleneck::PrefillBound, 5)]),
            Bottleneck::PrefillBound
        );
        assert_eq!(vote(&[]), Bottleneck::NoSchedulerLines);
    }

    #[test]
    fn overrides_apply_to_weak_verdicts_only() {
        let slow = Overrides {
            slow_decode: true,
            ..Overrides::default()
        };
        assert_eq!(
            decide(&[(Bottleneck::ClientBound, 3)], slow),
            Bottleneck::DecodeComputeBound
        );
        assert_eq!(
            decide(&[(Bottleneck::KvCacheBound, 3)], slow),
            Bottleneck::KvCacheBound
        );
        let hung = Overrides {
            slow_decode: true,
            watchdog: true,
            ..Overrides::default()
        };
        assert_eq!(
            decide(&[(Bottleneck::ClientBound, 3)], hung),
            Bottleneck::Stall
        );
        let retracted = Overrides {
            retractions: true,
            ..Overrides::default()
        };
        assert_eq!(decide(&[], retracted), Bottleneck::KvCacheBound);
        // without batch lines the events decide; with them they are findings only
        let oom = Overrides {
            oom: true,
            watchdog: true,
            startup_capacity: true,
            ..Overrides::default()
        };
        assert_eq!(decide(&[], oom), Bottleneck::OutOfMemory);
        // what ended serving is the verdict after batch lines too
        assert_eq!(
            decide(&[(Bottleneck::ClientBound, 3)], oom),
            Bottleneck::OutOfMemory
        );
        let crashed = Overrides {
            crash: true,
            ..Overrides::default()
        };
        assert_eq!(
            decide(&[(Bottleneck::RunningCapBound, 30)], crashed),
            Bottleneck::SchedulerCrashed
        );
        let watchdog = Overrides {
            watchdog: true,
            ..Overrides::default()
        };
        assert_eq!(
            decide(&[(Bottleneck::KvCacheBound, 30)], watchdog),
            Bottleneck::Stall
        );
        // failed transfers: the verdict without batch lines or a named bottleneck, else not
        let transfers = Overrides {
            transfer_failed: true,
            startup_capacity: true,
            ..Overrides::default()
        };
        assert_eq!(decide(&[], transfers), Bottleneck::KvTransferFailed);
        assert_eq!(
            decide(&[(Bottleneck::Inconclusive, 3)], transfers),
            Bottleneck::KvTransferFailed
        );
        assert_eq!(
            decide(&[(Bottleneck::KvCacheBound, 3)], transfers),
            Bottleneck::KvCacheBound
        );
        let startup = Overrides {
            startup_capacity: true,
            ..Overrides::default()
        };
        assert_eq!(decide(&[], startup), Bottleneck::StartupOnly);
        assert_eq!(
            decide(&[(Bottleneck::PrefillBound, 3)], retracted),
            Bottleneck::PrefillBound
        );
    }
}
