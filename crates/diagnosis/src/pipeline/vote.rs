//! The verdict stage: each scheduler's reason, the rules that override a weak vote or end
//! serving, and the server's bottleneck with the scheduler that carries it.

use crate::evidence::view::SchedulerView;
use crate::report::{Bottleneck, LongRequests, PoolFill};
use crate::rules::kv_cache_bound::Pattern;
use crate::rules::{self, Input};
use crate::verdict::{self, Overrides, Reason};

/// Events that end or block serving: the verdict without batch lines, and a crash, OOM or
/// watchdog after them too (`verdict::ENDS_SERVING`). The verdict and the headline read these
/// facts; the findings are the event rules' own, run with the registry
/// (`rules::FINDING_RULES`), which calls their `check` again.
pub(super) struct Events {
    pub(super) oom: Option<rules::oom::Facts>,
    pub(super) crash: Option<rules::scheduler_exception::Facts>,
    pub(super) incomplete: Option<rules::startup_incomplete::Facts>,
    pub(super) watchdog: Option<rules::watchdog::Facts>,
    pub(super) rejected: Option<rules::rejected_requests::Facts>,
    pub(super) transfer: Option<rules::watchdog::Facts>,
}

/// The verdict and what it rests on.
pub(super) struct Vote<'a> {
    /// `decode_compute`'s facts.
    pub(super) slow_decode: Option<rules::decode_compute::Facts>,
    /// `prefill_compute`'s facts.
    pub(super) slow_prefill: Option<rules::prefill_compute::Facts>,
    /// Whether a long stall is seen.
    pub(super) long_stall: bool,
    /// The events that end or block serving.
    pub(super) events: Events,
    /// What the overrides read.
    pub(super) overrides: Overrides,
    /// The server's bottleneck.
    pub(super) bottleneck: Bottleneck,
    /// The first scheduler whose own reason names the bottleneck, with that reason.
    pub(super) carrier: Option<(&'a SchedulerView<'a>, &'a Reason)>,
    /// The KV-bound pattern's facts, for the headline and the plans.
    pub(super) pool_fill: Option<PoolFill>,
    /// See [`Self::pool_fill`].
    pub(super) long_requests: Option<LongRequests>,
}

/// The verdict: each scheduler's (`reasons`, one per view of `input`), then the server's.
pub(super) fn vote<'a>(input: &Input<'a>, reasons: &'a [Reason]) -> Vote<'a> {
    let views = input.views;
    let ev = input.ev;
    let slow_decode = rules::decode_compute::check(views);
    let slow_prefill = rules::prefill_compute::check(input);
    let long_stall = rules::stall::has_long_stall(views);
    // Events that end or block serving: the verdict without batch lines, and a crash, OOM or
    // watchdog after them too (`verdict::ENDS_SERVING`).
    let oom = rules::oom::check(input);
    let crash = rules::scheduler_exception::check(input);
    let incomplete = rules::startup_incomplete::check(input);
    let watchdog = rules::watchdog::check(input);
    let rejected = rules::rejected_requests::check(input);
    let transfer = rules::kv_transfer::check(input);
    let votes: Vec<(Bottleneck, u64)> = views
        .iter()
        .zip(reasons)
        .map(|(v, r)| (r.bottleneck(), v.steady.len() as u64))
        .collect();
    let overrides = Overrides {
        slow_decode: slow_decode.is_some(),
        slow_prefill: slow_prefill.is_some(),
        long_stall,
        watchdog: ev.watchdog.count > 0 || ev.alarms.collective_timeouts.count > 0,
        retractions: input.retractions.events > 0,
        oom: oom.is_some(),
        crash: crash.is_some(),
        startup_incomplete: incomplete
            .as_ref()
            .is_some_and(|f| f.before_pool || f.in_capture),
        startup_capacity: ev.startup.max_total_num_tokens.is_some() && ev.benchmarks.is_empty(),
        rejections: rejected.is_some(),
        transfer_failed: transfer.is_some(),
        jit_at_end: jit_at_end(ev, views),
    };
    let bottleneck = verdict::decide(&votes, overrides);
    let carrier = views
        .iter()
        .zip(reasons)
        .find(|(_, r)| r.bottleneck() == bottleneck);
    // the KV-bound pattern's facts, for the headline and the plans
    let (pool_fill, long_requests) = match carrier.map(|c| c.1) {
        Some(Reason::KvCache(Pattern::FillsAsAdmitted(f))) => (Some(*f), None),
        Some(Reason::KvCache(Pattern::FewLongRequests(l))) => (None, Some(*l)),
        _ => (None, None),
    };
    Vote {
        slow_decode,
        slow_prefill,
        long_stall,
        events: Events {
            oom,
            crash,
            incomplete,
            watchdog,
            rejected,
            transfer,
        },
        overrides,
        bottleneck,
        carrier,
        pool_fill,
        long_requests,
    }
}

impl Vote<'_> {
    /// The verdict of a scheduler's row in the table. A hung server hangs on every rank: a
    /// rank whose own lines look weak (client bound, inconclusive) shows the stall in the table
    /// too, as the headline does.
    ///
    /// So does a server verdict the overrides name from a weak vote (slow decode or prefill
    /// steps, a log that ends in a JIT warm-up): a weak row shows it as the headline does, not
    /// "client too slow" beside a compute-bound headline.
    pub(super) fn row_verdict(&self, r: &Reason) -> Bottleneck {
        let own = r.bottleneck();
        let weak = matches!(own, Bottleneck::ClientBound | Bottleneck::Inconclusive);
        match self.bottleneck {
            Bottleneck::Stall => verdict::decide(&[(own, 1)], self.overrides),
            Bottleneck::DecodeComputeBound
            | Bottleneck::PrefillComputeBound
            | Bottleneck::Inconclusive
                if weak =>
            {
                verdict::decide(&[(own, 1)], self.overrides)
            }
            _ => own,
        }
    }
}

/// A JIT compile session began after the last batch line of every scheduler of its source:
/// the log ends in the server's warm-up.
pub(super) fn jit_at_end(ev: &crate::evidence::Evidence, views: &[SchedulerView<'_>]) -> bool {
    let Some(jit) = ev.jit_compile.first else {
        return false;
    };
    views
        .iter()
        .filter_map(|v| v.tl.last)
        .filter(|l| l.source == jit.source)
        .all(|l| l.line < jit.line)
}
