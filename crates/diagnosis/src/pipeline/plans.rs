//! The plans stage: the KV capacity model and its what-if table, the step-time projection,
//! and the recommendations.

use super::client::ClientSide;
use super::findings::Found;
use super::vote::Vote;
use crate::context::Context;
use crate::evidence::view::SchedulerView;
use crate::narrative;
use crate::recommend::{self, Load};
use crate::report::{
    Bottleneck, CapacityModel, Finding, FindingKind, Lever, NotConcluded, NotConcludedReason,
    Projection, Recommendation,
};
use crate::rules::{self, Input};
use crate::thresholds as th;
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
    /// DP attention sized for that layout (the model config's attention weights against the
    /// log's KV pool).
    pub(super) dp_attention: Option<crate::report::DpAttentionSizing>,
    /// What to change.
    pub(super) recommendations: Vec<Recommendation>,
    /// How loaded the scheduler behind the verdict is (its headroom).
    pub(super) load: Option<Load>,
}

/// Capacity, projection, recommendations: the capacity finding is added to `findings`, what
/// could not be modelled to `not_concluded`; the plans answer `findings`' levers.
pub(super) fn plans(
    input: &Input<'_>,
    ctx: &Context,
    vote: &Vote<'_>,
    found: &Found<'_>,
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
    let mut what_if_missing = None;
    // an Ascend NPU build (`npu graph` on its decode lines, or device='npu'): its KV cache has
    // no fp8, so no plan, row or answer offers one
    let npu = ev.startup.arg("device") == Some("npu")
        || views
            .iter()
            .any(|v| v.tl.decode.samples().iter().any(|d| d.npu));
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
                if npu {
                    cm.what_if
                        .rows
                        .retain(|r| !matches!(r.change, kv_capacity::Change::KvDtype { .. }));
                    cm.what_if
                        .assumptions
                        .push(narrative::NO_FP8_ON_NPU.to_string());
                }
                findings.extend(narrative::capacity(&cm));
                Some(cm)
            }
            Err(why) => {
                what_if_missing = recommend::WhatIfMissing::of(&why);
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
            let assumed = speculative_default_cap(input, v);
            projection::projection(
                &v.steady_decode,
                capacity_model.as_ref(),
                capacity
                    .max_running_requests
                    .or(assumed.then_some(th::SPEC_DEFAULT_MAX_RUNNING)),
                assumed,
            )
        });
    // the scheduler behind the verdict, as in the headline (else the busiest)
    let load = carrier
        .map(|c| c.0)
        .or(primary)
        .and_then(|v| load(input, v, found.ramp.as_ref()));
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
    let dp_attention = kv_replicated_by_tp.and_then(|tp| {
        let config = &ctx.model.as_ref()?.config;
        let gib = f64::from(1u32 << 30);
        crate::report::DpAttentionSizing::new(
            tp,
            config.mla_split_attention_weight_bytes()? / gib,
            config.embedding_weight_bytes().map(|b| b / gib),
            ev.startup.kv_alloc_gb?,
        )
    });
    let server_cap = side.server_cap;
    let recommendations = recommend::plans(&recommend::Input {
        bottleneck,
        capacity: capacity_model.as_ref(),
        what_if_missing,
        fp8_kv: if npu {
            recommend::Fp8Kv::NotOnNpu
        } else if ev.startup.kv_cache_is_8bit() {
            recommend::Fp8Kv::AlreadySet
        } else {
            recommend::Fp8Kv::Lever
        },
        projection: projection.as_ref(),
        client: side.client.as_ref(),
        retractions: input.retractions,
        retraction_material: found.retraction.as_ref().is_some_and(|f| f.material()),
        load,
        mem_fraction_static: capacity.mem_fraction_static,
        measured_tok_per_s: side.steady_gen_throughput.as_ref().map(|r| r.value),
        levers: &levers,
        long_requests: vote.long_requests.is_some(),
        pd_decode: carrier.is_some_and(|(v, _)| v.is_pd_decode()),
        kv_replicated_by_tp,
        dp_attention: dp_attention.as_ref(),
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
            // the requests the cap held: waiting on a steady decode line with the batch at the
            // cap (not a ramp's burst waiting below it for its prefill turn, real-long dp16)
            queued_peak: input
                .views
                .iter()
                .filter_map(|v| {
                    let c = capacity
                        .max_running_requests
                        .filter(|&c| c > 0)
                        .or(v.pinned_across_ranks)?;
                    v.steady_decode
                        .iter()
                        .filter(|d| d.running.is_some_and(|r| r >= c))
                        .filter_map(|d| d.queue)
                        .max()
                })
                .max(),
            per_rank: input.views.len() > 1,
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
        load,
        capacity_model,
        projection,
        kv_replicated_by_tp,
        dp_attention,
        recommendations,
    }
}

/// No cap stated, speculative decoding on every steady decode line, no DP ranks beyond the
/// first: SGLang's default cap ([`th::SPEC_DEFAULT_MAX_RUNNING`], `server_args.py`) holds
/// unless the flag was given, so it is assumed, and said.
fn speculative_default_cap(input: &Input<'_>, v: &SchedulerView<'_>) -> bool {
    input.capacity.max_running_requests.is_none()
        && !v.steady_decode.is_empty()
        && v.steady_decode.iter().all(|d| d.accept_len.is_some())
        && input.views.iter().all(|w| w.key.dp.is_none_or(|d| d == 0))
}

/// How loaded `v` is, for the recommendations' headroom ([`Load::headroom`]); `ramp`:
/// `ramp_only`'s facts over `input` (the findings' [`Found::ramp`], not checked again).
pub(super) fn load(
    input: &Input<'_>,
    v: &SchedulerView<'_>,
    ramp: Option<&rules::ramp_only::Facts>,
) -> Option<Load> {
    let capacity = input.capacity;
    Some(Load {
        running_median: v.running.median?,
        usage_median: v.usage.median?,
        usage_p90: v.usage.p90,
        usage_per_request: v.usage_per_request(),
        max_running_requests: capacity.max_running_requests.filter(|&c| c > 0),
        pool_per_long_request: v.pool_per_long_request(capacity.max_total_num_tokens),
        mamba_per_request: v.mamba_per_request(),
        speculative_default_cap: speculative_default_cap(input, v),
        too_short: ramp.is_some_and(|f| !f.under_load())
            || v.span
                .as_ref()
                .is_none_or(|s| s.steady_end_s - s.steady_start_s < th::HEADROOM_MIN_SPAN_S),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recommend::Limit;
    use crate::rules::testing::{whole, with_input};

    fn headroom(rel: &str) -> (Load, Option<(f64, Limit)>) {
        with_input(&whole(rel), |i| {
            let l = load(i, &i.views[0], rules::ramp_only::check(i).as_ref()).expect("load");
            (l, l.headroom())
        })
    }

    #[test]
    fn room_is_counted_at_the_longer_requests_kv() {
        // 105: one request at a time in a 238,809-token pool; `token usage` prints 0.00, the
        // exact `#token` reaches ~8k for the longest requests: ~27 of those fit, not the 2047
        // the running cap leaves
        let (l, h) = headroom("real-4/105-amd-2x-r9700-rdna4-tp2-coder30b-awq-no-graph-23tps.log");
        assert_eq!(l.max_running_requests, Some(2048));
        let (extra, limit) = h.unwrap();
        assert_eq!(limit, Limit::KvCache);
        assert!((20.0..40.0).contains(&extra), "{extra}");
    }

    #[test]
    fn speculative_decoding_without_a_stated_cap_assumes_the_default() {
        // 101: EAGLE on (accept len on every decode line), no cap in the log: 48 is assumed,
        // and the KV of its long-prefix requests comes first
        let (l, h) =
            headroom("real-4/101-dgxspark-gb10-long-prefix-chunked-then-400-ctx-exceeded.log");
        assert!(l.speculative_default_cap);
        assert_eq!(l.max_running_requests, None);
        let (extra, limit) = h.unwrap();
        assert!(extra < 48.0 - l.running_median, "{extra}");
        assert_eq!(limit, Limit::KvCache);
        // without speculative decoding nothing is assumed
        let (l, _) = headroom("real-4/105-amd-2x-r9700-rdna4-tp2-coder30b-awq-no-graph-23tps.log");
        assert!(!l.speculative_default_cap);
    }

    #[test]
    fn a_ramp_or_an_instant_gives_no_headroom_figure() {
        // 009: 13 s of ramp (running 1 -> 40, nothing waits); 057: three prefill lines in one
        // second: how many more would fit is not in either
        for rel in [
            "real-3/009-pr30047-npu-mamba-usage-accept-len.log",
            "real-3/057-i6291-v0.4.6-prefill-prefix-hit-completions.log",
        ] {
            let (l, h) = headroom(rel);
            assert!(l.too_short, "{rel}");
            assert_eq!(h, None, "{rel}");
        }
    }

    #[test]
    fn a_ramp_still_bounds_the_headroom_by_the_cap() {
        // 009's ramp: the requests' KV is not settled and its mamba usage holds at 0.80 from
        // 10 to 40 running (the prefix cache's states, not a share per request), so only the
        // cap bounds it: the speculative default (48) leaves 8
        let (mut l, _) = headroom("real-3/009-pr30047-npu-mamba-usage-accept-len.log");
        assert!(l.mamba_per_request.is_some());
        assert_eq!(l.cap_headroom(), Some((8.0, Limit::SpeculativeDefaultCap)));
        // without a cap nothing bounds it
        l.speculative_default_cap = false;
        assert_eq!(l.cap_headroom(), None);
    }

    #[test]
    fn the_fullest_pool_per_request_comes_first() {
        // 009 read as if steady: 40 running at full-token usage 0.74 and mamba usage 0.80; a
        // request holds more of the mamba slots than of the KV pool, so the slots stop first
        let (mut l, _) = headroom("real-3/009-pr30047-npu-mamba-usage-accept-len.log");
        l.too_short = false;
        let (extra, limit) = l.headroom().unwrap();
        assert_eq!(limit, Limit::MambaSlots);
        assert!(
            (extra - (0.95 / (0.80 / 40.0) - 40.0)).abs() < 0.5,
            "{extra}"
        );
        // without the mamba pool, speculative decoding's default cap (48) comes next, then
        // the KV pool, further out
        l.mamba_per_request = None;
        assert!(l.speculative_default_cap);
        assert_eq!(l.headroom(), Some((8.0, Limit::SpeculativeDefaultCap)));
        l.speculative_default_cap = false;
        let (kv, limit) = l.headroom().unwrap();
        assert_eq!(limit, Limit::KvCache);
        assert!(kv > 8.0);
    }
}
