//! The plans stage: the KV capacity model and its what-if table, the step-time projection,
//! and the recommendations.

use super::client::ClientSide;
use super::vote::Vote;
use crate::context::Context;
use crate::narrative;
use crate::recommend::{self, Load};
use crate::report::{
    Bottleneck, CapacityModel, Finding, FindingKind, Lever, NotConcluded, NotConcludedReason,
    Projection, Recommendation,
};
use crate::rules::{self, Input};
use crate::{capacity, projection};

/// Capacity, projection, recommendations.
pub(super) struct Plans {
    /// The KV capacity model and its what-if table.
    pub(super) capacity_model: Option<CapacityModel>,
    /// The decode step-time fit and the throughput it projects.
    pub(super) projection: Option<Projection>,
    /// The TP size of an MLA model at TP > 1 without DP attention (every rank holds the whole
    /// latent KV).
    pub(super) kv_replicated_by_tp: Option<u32>,
    /// What to change.
    pub(super) recommendations: Vec<Recommendation>,
}

/// Capacity, projection, recommendations: the capacity finding is added to `findings`, what
/// could not be modelled to `not_concluded`; the plans answer `findings`' levers.
pub(super) fn plans(
    input: &Input<'_>,
    ctx: &Context,
    vote: &Vote<'_>,
    retraction: Option<&rules::retraction::Facts>,
    side: &ClientSide<'_>,
    findings: &mut Vec<Finding>,
    not_concluded: &mut Vec<NotConcluded>,
) -> Plans {
    let (ev, views, capacity) = (input.ev, input.views, input.capacity);
    let (bottleneck, carrier) = (vote.bottleneck, vote.carrier);
    let primary = side.primary;
    let cached_share = primary.and_then(|v| {
        let agg = &v.tl.agg;
        let total = agg.prefill_cached_tokens + agg.prefill_new_tokens;
        (total > 0).then(|| agg.prefill_cached_tokens as f64 / total as f64)
    });
    // The KV tokens a running request holds where the pool binds: what sizes each what-if
    // row's decode concurrency when no records give the requests' lengths.
    let observed_held = primary
        .filter(|v| v.kv_full())
        .and_then(|v| Some(v.usage_per_request()? * capacity.max_total_num_tokens? as f64));
    let capacity_model =
        match capacity::capacity_model(ev, ctx, capacity, cached_share, observed_held) {
            Ok(b) => {
                let mut cm = b.model;
                cm.pre_source = narrative::memory_source(&b.pre);
                cm.free_now_source = b.free_now.as_ref().map(narrative::memory_source);
                if let capacity::CellSource::LogDisagreesWithConfig { config, log } = b.cell {
                    not_concluded.push(narrative::not_concluded(
                        NotConcludedReason::ModelConfigDisagrees,
                        Some(&narrative::cell_disagreement(config, log)),
                    ));
                }
                findings.extend(narrative::capacity(&cm));
                Some(cm)
            }
            Err(why) => {
                not_concluded.push(narrative::not_concluded(
                    NotConcludedReason::NoWhatIfTable,
                    Some(&why.to_string()),
                ));
                None
            }
        };
    // a drain's lines change batch, context and graph mode together: no fit, no ceiling
    let projection = primary
        .filter(|_| bottleneck != Bottleneck::Drain)
        .and_then(|v| {
            projection::projection(
                &v.steady_decode,
                capacity_model.as_ref(),
                capacity.max_running_requests,
            )
        });
    // the scheduler behind the verdict, as in the headline (else the busiest)
    let load = carrier.map(|c| c.0).or(primary).and_then(|v| {
        Some(Load {
            running_median: v.running.median?,
            usage_median: v.usage.median?,
            usage_p90: v.usage.p90,
            usage_per_request: v.usage_per_request(),
            max_running_requests: capacity.max_running_requests.filter(|&c| c > 0),
        })
    });
    let levers: Vec<(Lever, FindingKind)> = findings
        .iter()
        .flat_map(|f| f.levers.iter().map(|&l| (l, f.kind)))
        .collect();
    // an MLA model at TP > 1 without DP attention: every rank holds the whole latent KV
    let kv_replicated_by_tp = {
        let par = capacity::parallel(ev, ctx);
        let mla = ctx.model.as_ref().map_or(ev.startup.kv_alloc_mla, |m| {
            m.config.attention_kind() == kv_capacity::AttentionKind::Mla
        });
        // lines tagged with DP ranks: DP (attention) is already on, whatever the args say
        let dp_tagged = views.iter().any(|v| v.key.dp.is_some());
        (mla && par.tp_size > 1 && par.attn_tp_size.is_none() && !dp_tagged).then_some(par.tp_size)
    };
    let server_cap = side.server_cap;
    let recommendations = recommend::plans(&recommend::Input {
        bottleneck,
        capacity: capacity_model.as_ref(),
        projection: projection.as_ref(),
        client: side.client.as_ref(),
        retractions: input.retractions,
        retraction_material: retraction.is_some_and(|f| f.material()),
        load,
        mem_fraction_static: capacity.mem_fraction_static,
        measured_tok_per_s: side.steady_gen_throughput.as_ref().map(|r| r.value),
        levers: &levers,
        long_requests: vote.long_requests.is_some(),
        pd_decode: carrier.is_some_and(|(v, _)| v.is_pd_decode()),
        kv_replicated_by_tp,
        cap_advice: recommend::CapAdvice {
            client: server_cap.and_then(|cap| {
                Some(recommend::ClientLimit {
                    limit: side.benchmark_runs.last()?.summary.max_concurrency?,
                    server_total: cap.total(),
                    per_rank: cap.per_rank,
                    dp_ranks: cap.dp_ranks,
                })
            }),
            graph_sizes_listed: rules::cuda_graph::graph_sizes_listed(input),
            nothing_waits: carrier
                .map(|c| c.0)
                .or(side.primary)
                .is_some_and(|v| v.queued.max.is_some_and(|q| q < 0.5)),
            graph_max_bs: rules::cuda_graph::graph_max_bs(input).filter(|&g| {
                capacity
                    .max_running_requests
                    .is_some_and(|c| c > 0 && g <= c)
            }),
        },
    })
    .iter()
    .map(narrative::recommendation)
    .collect();
    Plans {
        capacity_model,
        projection,
        kv_replicated_by_tp,
        recommendations,
    }
}
