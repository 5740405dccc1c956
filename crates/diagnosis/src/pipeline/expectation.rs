//! The expectation stage: the measured rate against the ceiling of this setup and the user's
//! expectation.

use super::client::ClientSide;
use crate::context::Context;
use crate::narrative;
use crate::report::{ExpectationCheck, NotConcluded, NotConcludedReason, Projection};

/// The measured rate against the ceiling of this setup and the user's expectation; an
/// expectation asked and not answered is added to `not_concluded`.
pub(super) fn expectation(
    ctx: &Context,
    side: &ClientSide<'_>,
    projection: Option<&Projection>,
    fill: Option<crate::recommend::Fill>,
    kv_replicated_by_tp: Option<u32>,
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
        e.kv_replicated_by_tp = kv_replicated_by_tp;
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
