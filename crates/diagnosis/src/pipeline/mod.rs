//! The diagnosis, top to bottom: evidence → views → rules → verdict → findings → report.
//!
//! [`diagnose_with`] runs the stages in order; each stage is a function in a file of its own:
//! `vote.rs` (each scheduler's reason, the events, the server's bottleneck), `findings.rs` (the
//! rules' findings, most important first), `client.rs` (the server's rate, the client's view,
//! the benchmark runs), `plans.rs` (capacity model, projection, recommendations), `inputs.rs`
//! (the inputs, what they could not say, the sources), `headline.rs`, `expectation.rs`, then
//! the report's rows (`summary.rs`) and the log's other runs (`runs.rs`).

use crate::context::Context;
use crate::evidence::Evidence;
use crate::evidence::view;
use crate::narrative;
use crate::report::{NotConcludedReason, Report, SCHEMA_VERSION};
use crate::rules::Input;
use crate::verdict::{self, Reason};

mod client;
mod expectation;
mod findings;
mod headline;
mod inputs;
mod plans;
mod runs;
mod summary;
mod vote;

use inputs::{dp_totals, input_summaries, inputs_first, missing, sources};
use runs::server_runs;
use summary::{metrics_summary, request_times, scheduler_summary};

/// Diagnose from log evidence alone.
pub fn diagnose(ev: &Evidence) -> Report {
    diagnose_with(ev, &Context::default())
}

/// Diagnose from log evidence and whatever else the context holds (server info, `/metrics`
/// polls, GPU memory, model config, client records).
pub fn diagnose_with(ev: &Evidence, ctx: &Context) -> Report {
    // A server info that contradicts the log is another server's: set aside, said below.
    let disagreement = inputs::server_info_disagreement(ev, ctx);
    let ctx = without_disagreeing_info(ctx, disagreement.is_some());
    // Evidence: a polled server stands for the logs when they hold no batch lines; files that
    // repeat or continue each other are joined.
    let with_metrics;
    let ev = match &ctx.metrics {
        Some(m) if ev.schedulers.is_empty() && !m.samples.is_empty() => {
            with_metrics = ev.with_metrics_scheduler(m);
            &with_metrics
        }
        _ => ev,
    };
    let (consolidated, joins) = ev.consolidated();
    diagnose_consolidated(&consolidated, &joins, &ctx, disagreement)
}

/// [`diagnose_with`], taking the evidence: the files are joined and put in time order in the
/// evidence itself ([`Evidence::into_consolidated`]), not in a copy of every scheduler's
/// samples. The same report.
pub fn diagnose_owned(ev: Evidence, ctx: &Context) -> Report {
    let disagreement = inputs::server_info_disagreement(&ev, ctx);
    let ctx = without_disagreeing_info(ctx, disagreement.is_some());
    let ev = match &ctx.metrics {
        Some(m) if ev.schedulers.is_empty() && !m.samples.is_empty() => {
            ev.with_metrics_scheduler(m)
        }
        _ => ev,
    };
    let (ev, joins) = ev.into_consolidated();
    diagnose_consolidated(&ev, &joins, &ctx, disagreement)
}

/// The context, less its server info when that contradicts the log (another server's).
fn without_disagreeing_info(ctx: &Context, disagrees: bool) -> std::borrow::Cow<'_, Context> {
    if disagrees {
        std::borrow::Cow::Owned(Context {
            server: None,
            ..ctx.clone()
        })
    } else {
        std::borrow::Cow::Borrowed(ctx)
    }
}

/// The diagnosis of consolidated evidence (`joins`: what consolidating it joined;
/// `disagreement`: how the server info contradicted the log, when it did).
fn diagnose_consolidated(
    ev: &Evidence,
    joins: &[crate::evidence::JoinNote],
    ctx: &Context,
    disagreement: Option<String>,
) -> Report {
    let capacity = view::capacity_summary(ev, ctx);
    let views = view::views(ev);
    let span_s = view::longest_span_s(&views);
    let retractions = view::retraction_summary(ev, span_s);
    let input = Input {
        ev,
        views: &views,
        capacity: &capacity,
        retractions: &retractions,
    };

    // The verdict: each scheduler's, then the server's.
    let reasons: Vec<Reason> = views
        .iter()
        .map(|v| verdict::classify(v, &capacity))
        .collect();
    let vote = vote::vote(&input, &reasons);
    let bottleneck = vote.bottleneck;

    // Findings, most important first.
    let mut findings = Vec::new();
    let found = findings::findings(&input, &vote, &mut findings);

    // The server's rate and the client's view of it.
    let side = client::client_side(ev, ctx, &views, &capacity, bottleneck, &mut findings);

    // Capacity, projection, recommendations.
    let mut not_concluded = Vec::new();
    let mut plans = plans::plans(
        &input,
        ctx,
        &vote,
        &found,
        &side,
        &mut findings,
        &mut not_concluded,
    );

    let inputs = input_summaries(ev);
    if let Some(d) = &disagreement {
        not_concluded.push(narrative::not_concluded(
            NotConcludedReason::ServerInfoDisagrees,
            Some(d),
        ));
    }
    not_concluded.extend(missing(
        ev,
        ctx,
        &inputs,
        &capacity,
        side.steady_gen_throughput
            .as_ref()
            .is_some_and(|r| r.window_s > 0.0),
        side.client.as_ref(),
        side.benchmark_runs.is_empty(),
    ));
    inputs_first(&mut not_concluded);
    let sources = sources(joins, ctx, ev, &side.benchmark_runs);

    // The headline: the verdict and the figures of the scheduler that carries it.
    let dp_totals = dp_totals(ev, ctx, &views);
    let headline = headline::headline(&input, &vote, &found, &side, dp_totals.as_ref());

    // the what-if rows on the measured rate's scale: measured / the fit's "now" row
    if let (Some(p), Some(m)) = (
        plans.projection.as_mut(),
        side.steady_gen_throughput.as_ref(),
    ) {
        p.measured_scale = p
            .rows
            .iter()
            .find(|r| r.change == kv_capacity::Change::Current)
            .filter(|r| r.tok_per_s > 0.0)
            .map(|r| m.value / r.tok_per_s);
    }
    let expectation = expectation::expectation(
        ctx,
        &side,
        plans.projection.as_ref(),
        // requests held back below a pool with room: filling it is a change that fits too
        (bottleneck == crate::report::Bottleneck::SchedulerConservative)
            .then(|| {
                crate::recommend::fill(plans.capacity_model.as_ref(), plans.projection.as_ref())
            })
            .flatten(),
        plans.load,
        (plans.kv_replicated_by_tp, plans.dp_attention.clone()),
        &mut not_concluded,
    );
    let request_times = request_times(&input);
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        inputs,
        bottleneck,
        headline,
        schedulers: views
            .iter()
            .zip(&reasons)
            .map(|(v, r)| scheduler_summary(ev, v, &capacity, vote.row_verdict(r)))
            .collect(),
        dp_totals,
        steady_gen_throughput: side.steady_gen_throughput,
        capacity,
        retractions,
        findings,
        not_concluded,
        client: side.client,
        benchmark_runs: side.benchmark_runs,
        capacity_model: plans.capacity_model,
        projection: plans.projection,
        recommendations: plans.recommendations,
        sources,
        server_metrics: ctx.metrics.as_ref().and_then(metrics_summary),
        expectation,
        request_times,
        runs: None,
    };
    narrative::fill_methods(&mut report);
    report.runs = server_runs(ev, &report);
    report
}
