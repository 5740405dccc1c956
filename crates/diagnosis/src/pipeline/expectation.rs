//! The expectation stage: the measured rate against the ceiling of this setup and the user's
//! expectation.

use super::client::ClientSide;
use crate::context::Context;
use crate::narrative;
use crate::report::{ExpectationCheck, KvHolds, NotConcluded, NotConcludedReason, Projection};

/// The measured rate against the ceiling of this setup and the user's expectation; an
/// expectation asked and not answered is added to `not_concluded`. `layout`: the TP size of an
/// MLA model whose KV each rank holds whole, and DP attention sized for it.
pub(super) fn expectation(
    ctx: &Context,
    side: &ClientSide<'_>,
    projection: Option<&Projection>,
    fill: Option<crate::recommend::Fill>,
    load: Option<crate::recommend::Load>,
    layout: (Option<u32>, Option<crate::report::DpAttentionSizing>),
    not_concluded: &mut Vec<NotConcluded>,
) -> Option<ExpectationCheck> {
    let (client, steady_gen_throughput) = (&side.client, &side.steady_gen_throughput);
    let figures = crate::expectation::ClientFigures {
        printed_req_per_s: client.as_ref().and_then(|c| c.printed_req_per_s),
        now_req_per_s: client
            .as_ref()
            .and_then(|c| crate::client_view::now_rate(c).map(|r| r.value)),
        mean_completion_tokens: client.as_ref().and_then(|c| c.mean_completion_tokens),
    };
    let mut expectation = steady_gen_throughput
        .as_ref()
        .and_then(|m| crate::expectation::check(m, projection, fill, ctx.expectation, figures));
    if let Some(e) = expectation.as_mut() {
        // an MLA model's KV held whole by each TP rank, and DP attention sized for it
        (e.kv_replicated_by_tp, e.dp_attention) = layout;
        // with a fill plan (a conservative scheduler) the best change already says what
        // today's pool holds
        e.kv_holds = kv_holds(e, projection, load).filter(|_| fill.is_none());
        e.text = narrative::expectation(e);
    } else if ctx.expectation.is_some() {
        // asked and not answered: said, not silently dropped
        not_concluded.push(narrative::not_concluded(
            NotConcludedReason::ExpectationUnanswered {
                has_rate: steady_gen_throughput.is_some(),
            },
            None,
        ));
    }
    expectation
}

/// What today's pool holds when the ceiling is taken at a larger batch: the headroom's KV (or
/// mamba) limit at the longer requests' KV, below the ceiling's running count (its cap, or
/// no cap at all), with the fit's rate there on the measured scale.
fn kv_holds(
    e: &ExpectationCheck,
    projection: Option<&Projection>,
    load: Option<crate::recommend::Load>,
) -> Option<KvHolds> {
    use crate::recommend::Limit;
    let (p, l) = (projection?, load?);
    e.ceiling_tok_per_s?;
    let (extra, limit) = l.headroom()?;
    // a pool already full (the KV-bound verdicts) says nothing new here
    if extra < 1.0 || !matches!(limit, Limit::KvCache | Limit::MambaSlots) {
        return None;
    }
    let running = l.running_median + extra;
    if e.ceiling_at_running.is_some_and(|k| k <= running) {
        return None;
    }
    if p.current_tok_per_s <= 0.0 {
        return None;
    }
    let scale = e.measured_tok_per_s / p.current_tok_per_s;
    let tok_per_s = p.tok_per_s_at(running)? * scale;
    (tok_per_s > e.measured_tok_per_s).then_some(KvHolds { running, tok_per_s })
}
