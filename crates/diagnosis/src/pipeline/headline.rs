//! The headline stage: the verdict and the figures of the scheduler that carries it, and what
//! the headline of an event verdict names.

use super::client::ClientSide;
use super::findings::Found;
use super::vote::Vote;
use crate::narrative;
use crate::report::{
    Bottleneck, DpTotals, Headline, HeldAdmissionFacts, Incident, RejectedRequests, StartupCapacity,
};
use crate::rules::{self, Input};
use crate::verdict::Reason;

/// The headline: the verdict and the figures of the scheduler that carries it, in data and in
/// words.
pub(super) fn headline(
    input: &Input<'_>,
    vote: &Vote<'_>,
    found: &Found<'_>,
    side: &ClientSide<'_>,
    dp_totals: Option<&DpTotals>,
) -> Headline {
    let (views, capacity, retractions) = (input.views, input.capacity, input.retractions);
    let (bottleneck, carrier, events) = (vote.bottleneck, vote.carrier, &vote.events);
    let dp_ranks = views.iter().filter(|v| v.key.dp.is_some()).count();
    let a = carrier.map(|(v, _)| v);
    let mut headline = Headline {
        verdict: bottleneck,
        label: String::new(),
        summary: String::new(),
        text: String::new(),
        running_median: a.and_then(|a| a.running.median),
        running_peak: a.and_then(|a| a.running.max),
        running_total: (dp_ranks > 1).then(|| views.iter().filter_map(|v| v.running.median).sum()),
        dp_ranks,
        dp_ranks_of: dp_totals.and_then(|t| {
            t.dp_size
                .filter(|&n| n as usize > t.ranks)
                .or(t.ranks_at_least.filter(|_| t.dp_size.is_none()))
        }),
        queued_median: a.and_then(|a| a.queued.median),
        queued_peak: a.and_then(|a| a.queued.max),
        refill_queue_peak: a
            .filter(|a| {
                a.queued.max.is_some_and(|q| q < 1.0)
                    && a.steady_decode.iter().any(|d| d.queue.is_some())
            })
            .and_then(|a| a.steady_prefill.iter().filter_map(|p| p.queue).max())
            .filter(|&q| q >= 1)
            .map(|q| q as f64),
        token_usage_median: a.and_then(|a| a.usage.median),
        gen_throughput: side.steady_gen_throughput.clone(),
        busy_gen_tok_per_s: a.and_then(|a| a.gen_tps.median),
        ramp_only: found
            .ramp
            .as_ref()
            .filter(|r| !r.under_load())
            .map(|r| r.ramp),
        retraction_events: (a.is_none()
            && bottleneck == Bottleneck::KvCacheBound
            && retractions.events > 0)
            .then_some(retractions.events),
        slow_prefill: vote.slow_prefill.as_ref().map(|p| p.slow.clone()),
        pd_prefill_tok_per_s: None,
        pd_prefill_tokens: None,
        incident: incident_of(
            bottleneck,
            events.oom.as_ref(),
            events.crash.as_ref(),
            events.watchdog.as_ref(),
            events.incomplete.as_ref(),
            events.transfer.as_ref(),
            views.iter().any(|v| !v.steady.is_empty()),
        ),
        startup: matches!(
            bottleneck,
            Bottleneck::StartupOnly | Bottleneck::StartupIncomplete
        )
        .then(|| StartupCapacity {
            pool_tokens: capacity.max_total_num_tokens,
            max_running_requests: capacity.max_running_requests,
            context_len: capacity.context_len,
            graph_max_bs: rules::cuda_graph::graph_max_bs(input),
        }),
        benchmark_not_streamed: side
            .benchmark_runs
            .last()
            .is_some_and(|r| rules::bench_not_streamed::check(r).is_some()),
        benchmark_sent_too_fast: side
            .benchmark_runs
            .last()
            .and_then(rules::bench_not_streamed::sent_too_fast),
        held_admission: found
            .held
            .as_ref()
            .filter(|_| {
                matches!(
                    bottleneck,
                    Bottleneck::AdmissionHeld | Bottleneck::Inconclusive
                )
            })
            .map(|(_, f)| HeldAdmissionFacts {
                prefill_gap_iters: f.prefill_gap_iters,
                prefill_gap_s: f.prefill_gap_s,
            }),
        pd_decode_transfer: a
            .filter(|a| bottleneck == Bottleneck::ClientBound && a.is_pd_decode())
            .and_then(|a| {
                let t: Vec<f64> = a
                    .steady_decode
                    .iter()
                    .filter_map(|d| d.transfer_req)
                    .map(|x| x as f64)
                    .collect();
                (!t.is_empty()).then(|| t.iter().sum::<f64>() / t.len() as f64)
            }),
        pool_fill: vote.pool_fill,
        long_requests: vote.long_requests,
        pd_prefill_full: match carrier.map(|c| c.1) {
            Some(Reason::PdTransfer(f)) => f.full_batches.map(|b| crate::report::PdPrefillFull {
                per_pass: b.per_pass,
                share: b.share,
                waiting_max: f.prealloc_max,
            }),
            _ => None,
        },
        one_per_pass: match carrier {
            Some((_, Reason::PrefillLimit(f))) => f.one_per_pass.is_some(),
            // an assumed cap the batch reaches on some passes only: the others took one each
            Some((v, Reason::AssumedCapUnreadPool(_))) => {
                rules::prefill_limit::check(v, capacity).is_some_and(|f| f.one_per_pass.is_some())
            }
            _ => false,
        },
        drain: match carrier.map(|c| c.1) {
            Some(Reason::Drain(f)) => Some((f.from, f.to)),
            _ => None,
        },
        assumed_cap: match carrier.map(|c| c.1) {
            Some(Reason::AssumedCapUnreadPool(_)) => input.capacity.max_running_requests,
            _ => None,
        },
        at_cap_share: match carrier.map(|c| c.1) {
            Some(Reason::RunningCap(l) | Reason::AtCapNothingWaits(l)) => Some(l.share()),
            _ => None,
        },
        rejected: events
            .rejected
            .as_ref()
            .filter(|_| bottleneck == Bottleneck::RequestsRejected)
            .map(|f| RejectedRequests {
                client_errors: f.client_errors,
                server_errors: f.server_errors,
                context_len: f.context.map(|c| c.context_len),
                largest_requested: f.context.and_then(|c| c.largest_requested),
            }),
        lone_reading: bottleneck == Bottleneck::Inconclusive
            && views.iter().any(|v| !v.steady.is_empty())
            && views
                .iter()
                .filter(|v| !v.steady.is_empty())
                .all(rules::client_bound::lone_reading),
        no_server_log: input.ev.sources.is_empty(),
        jit_compile: input
            .ev
            .jit_compile
            .first
            .filter(|_| {
                bottleneck == Bottleneck::Inconclusive && super::vote::jit_at_end(input.ev, views)
            })
            .map(|l| input.span(l, l)),
    };
    if (matches!(
        bottleneck,
        Bottleneck::ClientBound | Bottleneck::Inconclusive | Bottleneck::PdTransferBound
    ) || headline.pd_prefill_full.is_some())
        && let Some((tokens, rate)) = rules::pd_transfer::prefill_instance(input)
    {
        headline.pd_prefill_tokens = Some(tokens);
        headline.pd_prefill_tok_per_s = Some(rate);
    }
    let (label, summary) = narrative::headline(&headline, vote.long_stall, &side.benchmark_runs);
    headline.text = format!("{label}: {summary}");
    (headline.label, headline.summary) = (label, summary);
    headline
}

/// What the headline of an event verdict names (see [`Headline::incident`]).
fn incident_of(
    bottleneck: Bottleneck,
    oom: Option<&rules::oom::Facts>,
    crash: Option<&rules::scheduler_exception::Facts>,
    watchdog: Option<&rules::watchdog::Facts>,
    incomplete: Option<&rules::startup_incomplete::Facts>,
    transfer: Option<&rules::watchdog::Facts>,
    after_serving: bool,
) -> Option<Incident> {
    match bottleneck {
        Bottleneck::OutOfMemory => oom.map(|f| Incident {
            exception: f.exception.clone(),
            message: f.message.clone(),
            frame: f.frame.clone(),
            step: f.step,
            process: None,
            waits_on_children: false,
            free_gib: None,
            count: None,
            after_serving,
        }),
        Bottleneck::SchedulerCrashed => crash.map(|f| Incident {
            exception: f.exception.clone(),
            message: f.message.clone(),
            frame: f.frame.clone(),
            step: f.step,
            process: None,
            waits_on_children: false,
            free_gib: None,
            count: None,
            after_serving,
        }),
        Bottleneck::Stall => watchdog.and_then(|f| f.hang.as_ref()).map(|h| Incident {
            exception: None,
            message: None,
            frame: h.frames.first().cloned(),
            step: None,
            process: h.process.clone(),
            waits_on_children: h.waits_on_children,
            free_gib: None,
            count: None,
            after_serving,
        }),
        Bottleneck::StartupIncomplete => incomplete.map(|f| Incident {
            exception: None,
            message: None,
            frame: None,
            step: Some(f.step),
            process: None,
            waits_on_children: false,
            free_gib: f.capture_avail_gib,
            count: None,
            after_serving,
        }),
        Bottleneck::KvTransferFailed => transfer.map(|f| Incident {
            exception: None,
            message: Some(f.first_text.clone()),
            frame: None,
            step: None,
            process: None,
            waits_on_children: false,
            free_gib: None,
            count: Some(f.count),
            after_serving,
        }),
        _ => None,
    }
}
